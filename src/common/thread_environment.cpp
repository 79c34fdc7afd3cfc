#include "star/common/thread_environment.h"

#include <cstdlib>
#include <unistd.h>

namespace star {

// libgomp's spin iterations before a waiting thread sleeps, one pause instruction each (~22 ns on
// the development machine's cores): ~20 µs, the gap between one token's last region and the next
// token's first. Ten times as long cost 4x in decode speed on an oversubscribed machine (load 13
// on 2 cores), where a spinning worker holds a core another thread is waiting for.
constexpr const char* kSpinCount = "1000";

void ensure_thread_environment(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv("GOMP_SPINCOUNT", kSpinCount, 0);
  execv("/proc/self/exe", argv);
}

}  // namespace star
