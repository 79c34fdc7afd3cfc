// RowSharing: the decode rows of a batched Phase 2 step spread over the ranks for the dense part of
// the forward. Every rank attends every sequence's query to its own KV shard, so every rank needs
// every row's q, k and v in every layer; but the norms, the products and the MLP of a row need to
// run on one rank only. Without sharing, each rank ran them for every row: at 16 sequences on two
// ranks, both ranks multiplied the same 16 rows by every weight. With it, each row's dense part runs
// on the rank that owns it, one all-gather per layer hands every rank the rows' q, k, v, and one at
// the end the rows' final hidden states (for the logits, which the ranks share by vocabulary slice).
// Split::kColumns shares the weights instead of the rows (below).
//
// A row's arithmetic does not change: its products, norms and attention see the same inputs on
// whichever rank computes them. Where the products give a row the same bits whatever rows sit
// beside it (row dots, row tiles, panels), a forward with sharing equals the one without bit for
// bit; sgemm (f32 weights, or other types past their row-dot or tile limit) may round differently
// with the row count.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/quant/blocks.h"

namespace star {

struct RowSharing {
  // kRows: shared row i is computed by rank owner[i] (above). kColumns: every rank runs every shared
  // row, and each product of them computes only this rank's output columns (column_slice) and then
  // hands them to every rank (share_columns): each rank reads 1/ranks of every layer weight, for
  // four all-gathers a layer instead of one. A row's bits do not change either way.
  enum class Split { kRows, kColumns };

  Communicator* comm = nullptr;
  // Rows [0, first_shared) are this rank's alone (a Phase 1 chunk, different on every rank); rows
  // from first_shared on are the same on every rank, and with kRows shared row i (row first_shared
  // + i) is computed by rank owner[i].
  int64_t first_shared = 0;
  Split split = Split::kRows;
  std::vector<int32_t> owner;
};

// Owners for shared rows that come in groups (a sequence's rows stay together: its first step
// carries its whole query): each group goes to the rank with the least load so far, the lowest such
// rank on a tie, so the ranks finish their rows about together. A row adds 1 to its rank's load;
// `initial_load` (one per rank, or empty for zeros) is the work a rank has before any row, in the
// same unit: its Phase 1 chunk, a query host's attention to its sequences' own tokens.
std::vector<int32_t> balanced_row_owners(std::span<const int64_t> group_rows, int ranks,
                                         std::span<const double> initial_load = {});

// The rows of an n-row forward this rank computes, ascending: [0, first_shared) and the shared rows
// it owns. INVALID_ARGUMENT when the sharing does not fit n rows or names a rank outside the group.
Result<std::vector<int64_t>> rows_computed_here(const RowSharing& sharing, int64_t n);

// The output columns [first, first + count) of a `width`-column product that `rank` of `ranks`
// computes under Split::kColumns: contiguous, in rank order, cut at multiples of 32 so that a
// slice starts at a weight panel (weight_tensor.h) and its bits are those of the whole product.
struct ColumnSlice {
  int64_t first = 0;
  int64_t count = 0;
};
ColumnSlice column_slice(int64_t width, int rank, int ranks);

// One product to hand over: `slice` [rows, column_slice(width).count] computed here; afterwards
// `whole` [rows, width] holds every rank's columns on every rank.
struct ColumnPiece {
  const float* slice;
  float* whole;
  int64_t width;
};
Status share_columns(Communicator& comm, int64_t rows, std::span<const ColumnPiece> pieces);

// One product's rows rounded to Q8_0 activation blocks, to hand over as share_columns hands floats:
// `slice` [rows, column_slice(width).count / 32] blocks rounded here; afterwards `whole`
// [rows, width / 32] holds every rank's blocks on every rank. Needs width a multiple of 32
// (column_slice then cuts at block edges).
struct ColumnBlocks {
  const quant::BlockQ8_0* slice;
  quant::BlockQ8_0* whole;
  int64_t width;
};
Status share_column_blocks(Communicator& comm, int64_t rows, const ColumnBlocks& piece);

// One piece of every row to exchange: data [n, width].
struct SharedColumns {
  float* data;
  int64_t width;
};

// Afterwards every shared row of every piece holds what its owner wrote there (the other ranks'
// values of that row are overwritten; this rank's own rows and the rows before first_shared are
// left as they are). One all-gather, of every piece at once; every rank of the group must call it.
Status share_rows(const RowSharing& sharing, std::span<const SharedColumns> pieces);

}  // namespace star
