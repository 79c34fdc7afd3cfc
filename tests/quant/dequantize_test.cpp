#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "quant/quant_fixtures.h"
#include "star/quant/dequantize.h"

namespace star::quant {
namespace {

using testing::DequantizeCase;

// Bits, not values: -0.0 vs 0.0 and subnormal results must match exactly.
void expect_same_bits(const std::vector<float>& actual, const DequantizeCase& c) {
  ASSERT_EQ(actual.size(), c.expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < actual.size() && mismatches < 8; ++i) {
    if (std::bit_cast<uint32_t>(actual[i]) != std::bit_cast<uint32_t>(c.expected[i])) {
      ADD_FAILURE() << dtype_name(c.dtype) << " " << c.label << " element " << i << ": got "
                    << actual[i] << ", gguf gives " << c.expected[i];
      ++mismatches;
    }
  }
}

TEST(Dequantize, EveryTypeMatchesGgufBitForBit) {
  const std::vector<DequantizeCase> cases = testing::load_dequantize_cases();
  for (DType dtype : testing::kAllDTypes) {
    int covered = 0;
    for (const DequantizeCase& c : cases) {
      if (c.dtype != dtype) continue;
      ++covered;
      ASSERT_EQ(static_cast<int64_t>(c.blocks.size()), c.rows * dtype_row_bytes(dtype, c.k));
      std::vector<float> out(static_cast<size_t>(c.rows * c.k));
      dequantize_rows(dtype, c.blocks.data(), c.rows, c.k, out.data());
      expect_same_bits(out, c);
    }
    EXPECT_GT(covered, 0) << "no fixture case for " << dtype_name(dtype);
  }
}

// GGUF only guarantees 2-byte alignment of a block; callers may hand any byte offset.
TEST(Dequantize, ReadsBlocksAtAnyAlignment) {
  for (const DequantizeCase& c : testing::load_dequantize_cases()) {
    std::vector<std::byte> shifted(c.blocks.size() + 1);
    std::memcpy(shifted.data() + 1, c.blocks.data(), c.blocks.size());
    std::vector<float> out(static_cast<size_t>(c.rows * c.k));
    dequantize_rows(c.dtype, shifted.data() + 1, c.rows, c.k, out.data());
    expect_same_bits(out, c);
  }
}

TEST(Dequantize, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<std::byte> bytes(1024);
  std::vector<float> out(1024);
  EXPECT_THROW(dequantize_rows(DType::kQ4_K, bytes.data(), 1, 128, out.data()), std::invalid_argument);
  EXPECT_THROW(dequantize_rows(DType::kQ8_0, bytes.data(), 1, 33, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace star::quant
