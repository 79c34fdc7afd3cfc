// cuBLASLt GEMMs (bf16 in, float32 accumulate) against cpu::matmul_nt on the same bf16 values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/backend/cpu/gemm.h"
#include "star/backend/cuda/gemm.h"

namespace star {
namespace {

using testing::to_device;
using testing::to_host;

using CudaGemm = testing::CudaTest;

struct Shape {
  int64_t n, k, m;
};

// Products of bf16 values are exact in float32, so the two sides differ only in summation order:
// bounded by k * eps * sum |x_i w_i|.
void expect_matches_cpu(cuda::Gemm& gemm, Shape s, bool accumulate, int64_t x_offset_rows) {
  std::mt19937 rng(static_cast<uint32_t>(s.n * 131 + s.k * 7 + s.m));
  const auto x_all = testing::rounded_to_bf16(
      testing::random_tensor(static_cast<size_t>((s.n + x_offset_rows) * s.k), rng));
  const auto w = testing::rounded_to_bf16(testing::random_tensor(static_cast<size_t>(s.m * s.k), rng));
  const auto y0 = testing::random_tensor(static_cast<size_t>(s.n * s.m), rng);
  std::vector<float> expected = y0;
  cpu::matmul_nt(x_all.data() + x_offset_rows * s.k, s.n, s.k, w.data(), s.m, expected.data(), accumulate);

  auto dx = testing::to_device_bf16(x_all);
  auto dw = testing::to_device_bf16(w);
  auto dy = to_device(y0);
  const Status st = gemm.matmul_nt(dx.data() + x_offset_rows * s.k, s.n, s.k, dw.data(), s.m, dy.data(),
                                   accumulate, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const float tolerance = 4e-7f * static_cast<float>(s.k);
  testing::expect_all_near(to_host(dy), expected, tolerance, 1e-6f, "y");
}

TEST_F(CudaGemm, MatchesCpuForModelShapes) {
  auto gemm = cuda::Gemm::create();
  ASSERT_TRUE(gemm.ok()) << gemm.status().to_string();
  for (Shape s : {Shape{1, 64, 96}, Shape{7, 128, 33}, Shape{64, 256, 512}, Shape{3, 1000, 17}}) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.k << "x" << s.m);
    expect_matches_cpu(**gemm, s, false, 0);
    expect_matches_cpu(**gemm, s, true, 0);
  }
}

TEST_F(CudaGemm, OffsetInputsWithLittleAlignment) {
  // The logits of the last rows start mid-buffer: with k odd the input is only 2-byte aligned.
  auto gemm = cuda::Gemm::create();
  ASSERT_TRUE(gemm.ok()) << gemm.status().to_string();
  expect_matches_cpu(**gemm, Shape{2, 63, 40}, false, 3);
  expect_matches_cpu(**gemm, Shape{1, 64, 40}, true, 5);
}

}  // namespace
}  // namespace star
