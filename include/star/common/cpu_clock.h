// Process CPU time. Phase 1 reports compute as CPU seconds so that ranks oversubscribed on a few
// cores (tests, benchmarks on a laptop) still report the work they did, not the time they waited.
#pragma once

#include <ctime>

namespace star {

inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace star
