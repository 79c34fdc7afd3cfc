#include "machine_rates.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace star {
namespace {

template <typename F>
double best_seconds(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

double measure_sgemm_gflops(int64_t m, int64_t n, int64_t k) {
  std::vector<float> a(m * k, 0.5f), b(n * k, 0.25f), c(m * n);
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                1.f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(k), 0.f, c.data(), static_cast<int>(n));
  };
  run();
  return 2.0 * m * n * k / best_seconds(5, run) / 1e9;
}

double measure_copy_gbps(int64_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  auto run = [&] {
#pragma omp parallel
    {
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t chunk = (bytes + threads - 1) / threads;
      const int64_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
      std::memcpy(dst.data() + begin, src.data() + begin, end - begin);
    }
  };
  run();
  return static_cast<double>(bytes) / best_seconds(5, run) / 1e9;
}

}  // namespace star
