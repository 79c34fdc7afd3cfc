#include "star/model/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace star {
namespace {

// Independent decoders, straight from the IEEE formats: sign, biased exponent, fraction.
double reference_f16(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int fraction = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(fraction, -24);
  } else if (exponent == 31) {
    v = fraction != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1024 + fraction, exponent - 25);
  }
  return (h & 0x8000) ? -v : v;
}

double reference_bf16(uint16_t b) {
  const int exponent = (b >> 7) & 0xff;
  const int fraction = b & 0x7f;
  double v;
  if (exponent == 0) {
    v = std::ldexp(fraction, -133);
  } else if (exponent == 255) {
    v = fraction != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(128 + fraction, exponent - 134);
  }
  return (b & 0x8000) ? -v : v;
}

template <typename Decode, typename Reference, typename Encode>
void check_every_pattern(Decode decode, Reference reference, Encode encode) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const double expected = reference(h);
    const float decoded = decode(h);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(decoded)) << bits;
      EXPECT_TRUE(std::isnan(decode(encode(decoded)))) << bits;
      continue;
    }
    ASSERT_EQ(static_cast<double>(decoded), expected) << "bits " << bits;
    ASSERT_EQ(std::signbit(decoded), std::signbit(expected)) << bits;
    ASSERT_EQ(encode(static_cast<float>(expected)), h) << "bits " << bits;
  }
}

TEST(DType, F16ExactForEveryPattern) { check_every_pattern(f16_to_f32, reference_f16, f32_to_f16); }
TEST(DType, BF16ExactForEveryPattern) { check_every_pattern(bf16_to_f32, reference_bf16, f32_to_bf16); }

// Halfway between two neighbours rounds to the one with an even last bit; just above goes up.
template <typename Reference, typename Encode>
void check_rounding(Reference reference, Encode encode, uint16_t first, uint16_t last) {
  for (uint32_t bits = first; bits < last; ++bits) {
    const auto lo = static_cast<uint16_t>(bits);
    const auto hi = static_cast<uint16_t>(bits + 1);
    const auto midpoint = static_cast<float>((reference(lo) + reference(hi)) / 2);  // exact in float
    ASSERT_EQ(encode(midpoint), (lo & 1) ? hi : lo) << bits;
    ASSERT_EQ(encode(std::nextafter(midpoint, INFINITY)), hi) << bits;
    ASSERT_EQ(encode(std::nextafter(midpoint, -INFINITY)), lo) << bits;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  check_rounding(reference_f16, f32_to_f16, 0x0000, 0x7bff);  // subnormals and normals up to 65504
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                    // halfway to 2^16 overflows to inf
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e-8f), 0x0000);                       // below half the smallest subnormal
  EXPECT_EQ(f32_to_f16(-1e30f), 0xfc00);
}

TEST(DType, BF16RoundsToNearestEven) {
  check_rounding(reference_bf16, f32_to_bf16, 0x0000, 0x7f7f);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
}

TEST(DType, ConvertAndEncodeUnalignedBuffers) {
  const std::vector<float> values = {1.0f, -2.5f, 0.1875f, 65504.0f, -0.0f};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    std::vector<std::byte> encoded = encode_from_f32(values, dtype);
    ASSERT_EQ(encoded.size(), values.size() * dtype_size(dtype));
    std::vector<std::byte> shifted(encoded.size() + 1);
    std::memcpy(shifted.data() + 1, encoded.data(), encoded.size());  // odd address
    std::vector<float> decoded(values.size());
    convert_to_f32(dtype, shifted.data() + 1, values.size(), decoded.data());
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits = 0;
      if (dtype != DType::kF32) std::memcpy(&bits, encoded.data() + 2 * i, 2);
      const double expected = dtype == DType::kF32   ? values[i]
                              : dtype == DType::kF16 ? reference_f16(bits)
                                                     : reference_bf16(bits);
      EXPECT_EQ(decoded[i], expected) << dtype_name(dtype) << " " << i;
    }
  }
  EXPECT_STREQ(dtype_name(DType::kBF16), "BF16");
}

}  // namespace
}  // namespace star
