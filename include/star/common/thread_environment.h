// OpenMP (attention, the row dots) and OpenBLAS (GEMMs) each keep a thread pool. With libgomp's
// default wait policy, idle OpenMP threads spin for milliseconds while OpenBLAS's threads run,
// which costs up to ~40% of prefill speed on a small machine. With no spinning at all (the passive
// policy alone), each parallel region wakes its sleeping workers through the kernel: ~20 µs a
// region against ~7 µs with a short spin (2 threads, quiet 16-core machine), and a decode step has
// about five regions a layer. So the workers spin briefly (GOMP_SPINCOUNT) before sleeping: long
// enough to span the gaps between the regions of decode steps, short against an OpenBLAS call.
// libgomp reads both variables once, when it is loaded, before main(): a binary that finds the
// policy unset sets both and re-executes itself.
#pragma once

namespace star {

// Call first thing in main(). Returns only when the environment is already right (or the re-exec
// failed, in which case the program carries on with the default policy).
void ensure_thread_environment(char** argv);

}  // namespace star
