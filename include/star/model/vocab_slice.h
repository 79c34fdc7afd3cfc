// VocabSlice: the vocabulary entries (logit columns) a forward computes. In a batched Phase 2 step
// every rank has the final hidden rows, so the ranks share the output projection, one slice each,
// instead of the query host computing every column while the others wait.
#pragma once

#include <cstdint>

#include "star/common/status.h"

namespace star {

// Entries [first, first + count).
struct VocabSlice {
  int64_t first = 0;
  int64_t count = -1;  // -1: to the end of the vocabulary
};

// The slice with count -1 made explicit, or INVALID_ARGUMENT when [first, first + count) does not
// lie in [0, vocab).
Result<VocabSlice> checked_vocab_slice(VocabSlice slice, int64_t vocab);
// Rank `rank` of `ranks`' slice: ceil(vocab / ranks) entries from rank times that, fewer (or none)
// at the end.
VocabSlice vocab_slice_of_rank(int64_t vocab, int rank, int ranks);

}  // namespace star
