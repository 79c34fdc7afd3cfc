// Per-rank logging: every line carries the MPI rank, so interleaved mpirun output stays readable.
#pragma once

#include <string>

namespace star {

// Sets spdlog's default logger to "[time] [rank R] [level] message" on stderr.
// level: trace, debug, info, warn, error, critical or off.
void init_logging(int rank, const std::string& level = "info");

}  // namespace star
