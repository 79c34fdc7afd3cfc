// star-bench phase (under mpirun): one request with a random context of a given length through
// Phase 1 and Phase 2; rank 0 prints one JSON line with the critical path, per-rank times, decode
// speed and all-gather traffic. scripts/bench/phase_sweep.py drives it over lengths, ranks and
// algorithms.
#pragma once

namespace star::bench {

int run_phase_command(int argc, char** argv);

}  // namespace star::bench
