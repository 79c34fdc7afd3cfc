#include "star/common/thread_environment.h"

#include <cstdlib>
#include <unistd.h>

namespace star {

void ensure_thread_environment(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
}

}  // namespace star
