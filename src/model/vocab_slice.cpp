#include "star/model/vocab_slice.h"

#include <algorithm>
#include <string>

namespace star {

Result<VocabSlice> checked_vocab_slice(VocabSlice slice, int64_t vocab) {
  if (slice.count == -1) slice.count = vocab - slice.first;
  if (slice.first < 0 || slice.count < 0 || slice.first > vocab || slice.count > vocab - slice.first) {
    return invalid_argument("forward_rows: vocabulary slice of " + std::to_string(slice.count) + " entries from " +
                            std::to_string(slice.first) + " is not inside [0, " + std::to_string(vocab) + ")");
  }
  return slice;
}

VocabSlice vocab_slice_of_rank(int64_t vocab, int rank, int ranks) {
  const int64_t per_rank = (vocab + ranks - 1) / ranks;
  const int64_t first = std::min<int64_t>(vocab, rank * per_rank);
  return {first, std::min(per_rank, vocab - first)};
}

}  // namespace star
