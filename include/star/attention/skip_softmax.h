// Skip Softmax (BLASST) as the attention kernels take it: the threshold of one call and the tiles
// it counted. The rule itself is in docs/sparse-attention.md and the kernels.
#pragma once

#include <cstdint>

namespace star {

// Skip Softmax (BLASST) for one kernel call: `scale_factor` is the phase's threshold_scale_factor S,
// lambda = S / nk, and the rule applies only for 0 < lambda < 1 (S = 0: dense). When `tiles` is set,
// the call adds its visited and skipped (vote group, key tile) pairs to it; pairs where no row of
// the group sees a key of the tile are counted in neither.
struct SkipSoftmaxTiles {
  int64_t visited = 0;
  int64_t skipped = 0;
  SkipSoftmaxTiles& operator+=(const SkipSoftmaxTiles& o) {
    visited += o.visited;
    skipped += o.skipped;
    return *this;
  }
  bool operator==(const SkipSoftmaxTiles&) const = default;
};

struct SkipSoftmax {
  double scale_factor = 0.0;
  SkipSoftmaxTiles* tiles = nullptr;
};

}  // namespace star
