#include <cstring>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "block_codecs.h"
#include "star/quant/dequantize.h"

namespace star::quant {
namespace {

// Blocks are copied out before decoding: GGUF data is only guaranteed 2-byte alignment per block
// and callers may pass any byte offset.
template <class Block>
void dequantize_blocks(const std::byte* src, int64_t blocks, int64_t block_elements, float* out) {
  for (int64_t i = 0; i < blocks; ++i) {
    Block block;
    std::memcpy(&block, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    dequantize_block(block, out + i * block_elements);
  }
}

template <class Block>
std::vector<std::byte> quantize_blocks(const float* values, int64_t blocks, int64_t block_elements) {
  std::vector<std::byte> bytes(static_cast<size_t>(blocks) * sizeof(Block));
  for (int64_t i = 0; i < blocks; ++i) {
    Block block{};
    quantize_block(values + i * block_elements, block);
    std::memcpy(bytes.data() + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
  return bytes;
}

void require_whole_blocks(const char* caller, DType dtype, int64_t rows, int64_t k) {
  if (rows >= 0 && dtype_row_bytes(dtype, k) >= 0) return;
  throw std::invalid_argument(std::string(caller) + ": " + std::to_string(rows) + " " + dtype_name(dtype) +
                              " rows of " + std::to_string(k) + " elements are not whole blocks of " +
                              std::to_string(dtype_block_elements(dtype)));
}

}  // namespace

void dequantize_rows(DType dtype, const std::byte* src, int64_t rows, int64_t k, float* out) {
  require_whole_blocks("dequantize_rows", dtype, rows, k);
  const int64_t block_elements = dtype_block_elements(dtype);
  // Blocks never straddle rows, so `rows` rows are rows·k/block blocks back to back.
  const int64_t elements = rows * k;
  const int64_t blocks = elements / block_elements;
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: convert_to_f32(dtype, src, static_cast<size_t>(elements), out); return;
    case DType::kQ4_0: dequantize_blocks<BlockQ4_0>(src, blocks, block_elements, out); return;
    case DType::kQ4_1: dequantize_blocks<BlockQ4_1>(src, blocks, block_elements, out); return;
    case DType::kQ5_0: dequantize_blocks<BlockQ5_0>(src, blocks, block_elements, out); return;
    case DType::kQ5_1: dequantize_blocks<BlockQ5_1>(src, blocks, block_elements, out); return;
    case DType::kQ8_0: dequantize_blocks<BlockQ8_0>(src, blocks, block_elements, out); return;
    case DType::kQ4_K: dequantize_blocks<BlockQ4_K>(src, blocks, block_elements, out); return;
    case DType::kQ5_K: dequantize_blocks<BlockQ5_K>(src, blocks, block_elements, out); return;
    case DType::kQ6_K: dequantize_blocks<BlockQ6_K>(src, blocks, block_elements, out); return;
  }
}

std::vector<std::byte> quantize_rows(DType dtype, const float* values, int64_t rows, int64_t k) {
  require_whole_blocks("quantize_rows", dtype, rows, k);
  const int64_t block_elements = dtype_block_elements(dtype);
  const int64_t elements = rows * k;
  const int64_t blocks = elements / block_elements;
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return encode_from_f32(std::span<const float>(values, static_cast<size_t>(elements)), dtype);
    case DType::kQ4_0: return quantize_blocks<BlockQ4_0>(values, blocks, block_elements);
    case DType::kQ4_1: return quantize_blocks<BlockQ4_1>(values, blocks, block_elements);
    case DType::kQ5_0: return quantize_blocks<BlockQ5_0>(values, blocks, block_elements);
    case DType::kQ5_1: return quantize_blocks<BlockQ5_1>(values, blocks, block_elements);
    case DType::kQ8_0: return quantize_blocks<BlockQ8_0>(values, blocks, block_elements);
    case DType::kQ4_K: return quantize_blocks<BlockQ4_K>(values, blocks, block_elements);
    case DType::kQ5_K: return quantize_blocks<BlockQ5_K>(values, blocks, block_elements);
    case DType::kQ6_K: return quantize_blocks<BlockQ6_K>(values, blocks, block_elements);
  }
  return {};
}

}  // namespace star::quant
