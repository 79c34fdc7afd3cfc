// star-bench: benchmarks and cost estimates for starserve. One subcommand per job:
//   model   prefill / decode against the machine's sgemm rate and copy bandwidth
//   phase   (under mpirun) Phase 1 critical path and Phase 2 decode for one request
//   plan    the Phase 1 cost model of docs/algorithms.md for any model, length and rank count
//   matmul  the CPU matmul paths (row dots, row tiles, widened tiles) per activation row count
//   attention  the CPU decode attention kernel over a long cache, per KV element type
//   skip-softmax  the CPU attention kernel with Skip Softmax against dense, back to back
//   skip-softmax-run  (under mpirun) Skip Softmax in a model run: attention-kernel time by S
//   rocket  (under mpirun) RocketKV decode speed and KV bytes per rank by prompt budget
#include <CLI/CLI.hpp>

#include "attention_command.h"
#include "matmul_command.h"
#include "model_command.h"
#include "phase_command.h"
#include "plan_command.h"
#include "skip_softmax_command.h"
#include "skip_softmax_run_command.h"
#include "rocket_command.h"
#include "star/common/thread_environment.h"

int main(int argc, char** argv) {
  star::ensure_thread_environment(argv);
  CLI::App app{"star-bench: benchmarks and cost estimates"};
  app.require_subcommand(1);
  star::ModelCommandOptions model_options;
  star::PhaseCommandOptions phase_options;
  star::PlanCommandOptions plan_options;
  star::AttentionCommandOptions attention_options;
  star::MatmulCommandOptions matmul_options;
  star::SkipSoftmaxCommandOptions skip_softmax_options;
  star::SkipSoftmaxRunCommandOptions skip_softmax_run_options;
  star::RocketCommandOptions rocket_options;
  CLI::App* model = star::add_model_command(app, model_options);
  CLI::App* phase = star::add_phase_command(app, phase_options);
  CLI::App* plan = star::add_plan_command(app, plan_options);
  CLI::App* attention = star::add_attention_command(app, attention_options);
  CLI::App* matmul = star::add_matmul_command(app, matmul_options);
  CLI::App* skip_softmax = star::add_skip_softmax_command(app, skip_softmax_options);
  CLI::App* skip_softmax_run = star::add_skip_softmax_run_command(app, skip_softmax_run_options);
  CLI::App* rocket = star::add_rocket_command(app, rocket_options);
  CLI11_PARSE(app, argc, argv);
  if (model->parsed()) return star::run_model_command(model_options);
  if (phase->parsed()) return star::run_phase_command(*phase, phase_options);
  if (plan->parsed()) return star::run_plan_command(*plan, plan_options);
  if (attention->parsed()) return star::run_attention_command(attention_options);
  if (matmul->parsed()) return star::run_matmul_command(matmul_options);
  if (skip_softmax->parsed()) return star::run_skip_softmax_command(skip_softmax_options);
  if (skip_softmax_run->parsed()) return star::run_skip_softmax_run_command(*skip_softmax_run, skip_softmax_run_options);
  if (rocket->parsed()) return star::run_rocket_command(*rocket, rocket_options);
  return 0;
}
