// One block of each quantized type <-> its float32 elements. dequantize_rows and quantize_rows
// (rows.cpp) walk the blocks of a row; these functions own the formulas of ggml-common.h.
#pragma once

#include "star/quant/blocks.h"

namespace star::quant {

// out[block elements] = the block's values, computed in the order ggml's dequantize_row_* computes
// them so that the float32 results are the same bits.
void dequantize_block(const BlockQ4_0& block, float* out);
void dequantize_block(const BlockQ4_1& block, float* out);
void dequantize_block(const BlockQ5_0& block, float* out);
void dequantize_block(const BlockQ5_1& block, float* out);
void dequantize_block(const BlockQ8_0& block, float* out);
void dequantize_block(const BlockQ4_K& block, float* out);
void dequantize_block(const BlockQ5_K& block, float* out);
void dequantize_block(const BlockQ6_K& block, float* out);

// block = the block ggml's quantize_row_*_ref makes of x[block elements]: bit for bit for the
// legacy types; for the K-quants a simpler quantizer whose error bound is stated in
// quantize_kquants.cpp.
void quantize_block(const float* x, BlockQ4_0& block);
void quantize_block(const float* x, BlockQ4_1& block);
void quantize_block(const float* x, BlockQ5_0& block);
void quantize_block(const float* x, BlockQ5_1& block);
void quantize_block(const float* x, BlockQ8_0& block);
void quantize_block(const float* x, BlockQ4_K& block);
void quantize_block(const float* x, BlockQ5_K& block);
void quantize_block(const float* x, BlockQ6_K& block);

// Unpacks sub-block j's (0..7) 6-bit scale and min of a Q4_K / Q5_K block (ggml's get_scale_min_k4).
void unpack_scale_min_k4(const uint8_t* packed, int j, uint8_t& scale, uint8_t& min);

}  // namespace star::quant
