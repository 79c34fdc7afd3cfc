// What this machine can do at best, measured the same way every run: the sgemm rate for a given
// shape and the memory copy bandwidth. Benchmarks report their speed as a fraction of these.
#pragma once

#include <cstdint>

namespace star {

// Best-of-several GFLOP/s of cblas_sgemm for C[m,n] = A[m,k]·B[n,k]ᵀ.
double measure_sgemm_gflops(int64_t m, int64_t n, int64_t k);

// Best-of-several memcpy rate in GB/s of bytes copied (count 2x for STREAM's read + write
// convention), using every OpenMP thread, over a buffer far larger than the caches.
double measure_copy_gbps(int64_t bytes = int64_t{512} << 20);


}  // namespace star
