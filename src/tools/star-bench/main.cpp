// star-bench: benchmarks of the CPU backend and the distributed engine, and the Phase 1 cost model.
//   star-bench model  ...   prefill / decode against the machine's sgemm rate and copy bandwidth
//   star-bench phase  ...   (under mpirun) Phase 1 critical path and Phase 2 decode for one request
//   star-bench plan   ...   the cost model of ALGORITHMS.md for any model, length and rank count
#include <cstdio>
#include <cstring>
#include <string>

#include "model_command.h"
#include "phase_command.h"
#include "plan_command.h"

int main(int argc, char** argv) {
  const std::string usage = "usage: star-bench model|phase|plan [options]  (--help after a command for its options)\n";
  if (argc < 2) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::string command = argv[1];
  // The command's own parser sees "star-bench <command>" as its program name.
  argv[1] = argv[0];
  if (command == "model") return star::bench::run_model_command(argc - 1, argv + 1);
  if (command == "phase") return star::bench::run_phase_command(argc - 1, argv + 1);
  if (command == "plan") return star::bench::run_plan_command(argc - 1, argv + 1);
  std::fprintf(stderr, "star-bench: unknown command '%s'\n%s", command.c_str(), usage.c_str());
  return 2;
}
