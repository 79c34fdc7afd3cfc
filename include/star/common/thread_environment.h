// OpenMP (attention) and OpenBLAS (GEMMs) each keep a thread pool. With libgomp's default wait
// policy, idle OpenMP threads spin while OpenBLAS's threads run, which costs up to ~40% of prefill
// speed on a small machine. libgomp reads OMP_WAIT_POLICY once, when it is loaded, before main():
// so a binary that finds it unset sets it to "passive" and re-executes itself once.
#pragma once

namespace star {

// Call first thing in main(). Returns only when the environment is already right (or the re-exec
// failed, in which case the program carries on with the default policy).
void ensure_thread_environment(char** argv);

}  // namespace star
