// Shared pieces of the GPU tests: a fixture that skips where there is no GPU, copies between host
// and device, and bf16 rounding that matches what the device stores.
#pragma once

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/device_buffer.h"
#include "star/model/dtype.h"

namespace star::testing {

// Every GPU test derives from this: without a device the test is reported as skipped, not passed.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status devices = cuda::device_status(); !devices.ok()) GTEST_SKIP() << devices.message();
  }
};

// A device failure while setting up a test's data is not a result about the code under test:
// stop with the reason.
[[noreturn]] inline void die_on_setup(const Status& status) {
  std::fprintf(stderr, "GPU test setup failed: %s\n", status.to_string().c_str());
  std::abort();
}

template <typename T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& host) {
  auto buffer = cuda::DeviceBuffer<T>::upload(host);
  if (!buffer.ok()) die_on_setup(buffer.status());
  return std::move(*buffer);
}

template <typename T>
cuda::DeviceBuffer<T> device_zeros(size_t count) {
  return to_device(std::vector<T>(count));
}

template <typename T>
std::vector<T> to_host(const cuda::DeviceBuffer<T>& buffer) {
  auto host = buffer.to_host();
  if (!host.ok()) die_on_setup(host.status());
  return std::move(*host);
}

inline __nv_bfloat16 bf16_of(float x) {
  __nv_bfloat16_raw raw;
  raw.x = f32_to_bf16(x);
  return __nv_bfloat16(raw);
}

// values rounded to bf16 and widened back: what a bf16 device copy of them holds.
inline std::vector<float> rounded_to_bf16(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = bf16_to_f32(f32_to_bf16(values[i]));
  return out;
}

inline cuda::DeviceBuffer<__nv_bfloat16> to_device_bf16(const std::vector<float>& values) {
  std::vector<__nv_bfloat16> host(values.size());
  for (size_t i = 0; i < values.size(); ++i) host[i] = bf16_of(values[i]);
  return to_device(host);
}

// |a - b| <= atol + rtol * |b| for every element, reporting the first element that is not. Equal
// values pass first: an empty partial's lse is -inf on both sides, and -inf - -inf is NaN.
inline void expect_all_near(const std::vector<float>& actual, const std::vector<float>& expected,
                            float atol, float rtol, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;
    const float tolerance = atol + rtol * std::abs(expected[i]);
    ASSERT_NEAR(actual[i], expected[i], tolerance) << what << ", element " << i;
  }
}

}  // namespace star::testing
