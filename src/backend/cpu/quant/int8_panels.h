// Many activation rows against a block-quantized weight in int8 products (AVX-512 VNNI): the
// prefill matmul of Q4_0, Q5_0, Q4_K, Q5_K and Q6_K weights, and with panels packed once (at
// model creation, matmul.h's prelay_weight) every product of a Q8_0 layer matrix.
//
// Widening the weights to float32 for sgemm multiplies in float at 16 products an instruction;
// vpdpbusd makes 64. So a strip of 16 weight rows is unpacked once, into one byte per element
// (its code) and a float scale (and a K-quant's min) per sub-block, with the codes of the 16 rows
// interleaved four at a time, one row per int32 lane: a "panel". Every activation row then meets
// the panel four elements at a time, broadcast, and each lane sums one weight row's products
// exactly per sub-block before the float scaling. The activations are rounded to Q8_0 blocks, as
// for the row dots (dot_kernels.h), so every output equals its row dot's up to the order of the
// float additions; and, each output being computed by the same instructions wherever it falls,
// it does not depend on n or on its place in it.
//
// Q4_1 and Q5_1 stay on sgemm: their Q8 activations cost SmolLM2 its accuracy (matmul.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "star/backend/cpu/dot_kernels.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu {

// One weight row in the form a panel takes it: element j is scale·(codes[j] − offset) − min, with
// scale (and min) per sub-block of `sub_block` elements.
struct PanelRowFormat {
  int sub_block;  // 32, or 16 for Q6_K
  int offset;     // the zero point the unsigned codes carry (Q4_0: 8, Q8_0: 128), or 0
  bool has_min;   // the K-quants' per-sub-block min (Q4_K, Q5_K)
  // row (k elements, whole blocks) -> codes[k], scales[k / sub_block], mins[k / 32] if has_min.
  void (*unpack)(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float* mins);
};

// The format of `dtype`, or nullptr for the types the panels do not take.
const PanelRowFormat* find_panel_row_format(DType dtype);

// y[i·ldy + r] = Σ_j w[r, j]·x̂[i, j] (y += ... when `accumulate`) for r < m, i < n, where x̂ is x's
// row i rounded to Q8_0 activation blocks and w's rows are w_row_bytes apart. Splits the weight
// rows across the OpenMP threads. Requires a format for `dtype` and best_isa() == kAvx512 (matmul's
// int8_panels_for).
void int8_panel_matmul(DType dtype, const std::byte* w, size_t w_row_bytes, int64_t m, int64_t k, const float* x,
                       int64_t n, float* y, int64_t ldy, bool accumulate);

// A weight's panels packed once, for products that would otherwise pack them every call: 16 rows
// a panel, codes [m / 16][k / 4][16][4] (the last panel's missing rows zero), scales
// [m / 16][k / sub_block][16], mins [m / 16][k / 32][16] where the format has them.
// row_l1[r] >= Σ_j |w[r, j]| (the elements as the panels hold them), where prelay_int8_panels was
// asked for it: with it a product's rounding of its activations bounds the change it makes to each
// output (int8_prelaid_panel_q16_maxima).
struct PrelaidPanels {
  const PanelRowFormat* format;
  int64_t m, k;
  std::vector<uint8_t> codes;
  std::vector<float> scales, mins;
  std::vector<float> row_l1;
};

// `w`'s m rows (w_row_bytes apart, k elements each) packed into panels, by the OpenMP threads, with
// their row_l1 where asked (empty otherwise: a pass over every element, kept to where it is used).
// Requires a format for `dtype` and best_isa() == kAvx512.
std::shared_ptr<const PrelaidPanels> prelay_int8_panels(DType dtype, const std::byte* w, size_t w_row_bytes,
                                                        int64_t m, int64_t k, bool row_l1 = false);

// One product of int8_prelaid_panel_matmul: y[i·rows + r − first] = Σ_j w[r, j]·x̂[i, j] for
// w = panels, r in [first, first + rows): all of them by default, else a slice starting at a panel
// (first a multiple of 16), whose outputs are bit for bit those of the whole.
struct PrelaidPanelOutput {
  const PrelaidPanels* panels;
  float* y;
  int64_t first = 0;
  int64_t rows = -1;  // -1: to the panels' end
};

// int8_panel_matmul over pre-packed panels, for one x against every output (all of one format and
// row length k): x is rounded once, and the 32-row units of all outputs share one OpenMP region.
// Each output comes out bit for bit as int8_panel_matmul's, whatever n.
void int8_prelaid_panel_matmul(const float* x, int64_t n, std::span<const PrelaidPanelOutput> outputs,
                               bool accumulate);

// int8_prelaid_panel_matmul for rows already rounded to Q8_0 activation blocks, x [n][k / 32]:
// the same outputs, bit for bit, as from the float32 rows they were rounded from. Q8_0 rounds each
// block alone, so a row's blocks may have been rounded in pieces, on different ranks.
void int8_prelaid_panel_matmul_q8_0(const quant::BlockQ8_0* x, int64_t n, std::span<const PrelaidPanelOutput> outputs,
                                    bool accumulate);

// One output of a Q8_0 weight's panels (its format's sub-block 32, no min) against x rounded to Q16
// activations instead (dot_kernels.h's ActivationType::kQ16: 16 bits a code in a signed high and an
// unsigned low byte plane): the output projection, which Q8_0 activations cost its top token
// (matmul_wide_activations). Two vpdpbusd a panel group: the high plane against the codes as
// stored (unsigned), then, the sum shifted 8 bits, the low plane against the codes less their
// offset (signed), so each block's Σ w·q is exact in int32 before its float scaling. As
// int8_prelaid_panel_matmul, each output is the same instructions whatever n and its place.
void int8_prelaid_panel_matmul_q16(const float* x, int64_t n, const PrelaidPanelOutput& output);

// int8_prelaid_panel_matmul_q16 where only each row's largest outputs matter (greedy decoding):
// every output that may be a row's largest (not NaN) comes out bit for bit as there, the others
// as −inf, so the row's first largest output is the same. The outputs come first from Q8_0
// activations (one int8 pass, two thirds of the Q16 pass's work at 16 rows); an output whose Q8
// value plus a bound on its difference from the Q16 value falls below the largest Q8 value less
// its bound cannot be the largest, and the panels of the others are multiplied again in Q16, row
// by row. The bound: Σ_j |w[r, j]|·max_j |x̂8[i, j] − x̂16[i, j]| for the roundings, plus the
// float sums' rounding. A row with a non-finite Q8 output comes out whole. Requires the panels'
// row_l1.
void int8_prelaid_panel_q16_maxima(const float* x, int64_t n, const PrelaidPanelOutput& output);

}  // namespace star::cpu
