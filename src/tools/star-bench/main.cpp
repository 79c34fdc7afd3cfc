// star-bench: benchmarks and cost estimates for starserve. One subcommand per job.
#include <CLI/CLI.hpp>

#include "plan_command.h"

int main(int argc, char** argv) {
  CLI::App app{"star-bench: benchmarks and cost estimates"};
  app.require_subcommand(1);
  star::PlanCommandOptions plan_options;
  CLI::App* plan = star::add_plan_command(app, plan_options);
  CLI11_PARSE(app, argc, argv);
  if (plan->parsed()) return star::run_plan_command(*plan, plan_options);
  return 0;
}
