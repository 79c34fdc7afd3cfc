// BpeMergeTable: ranked merge rules of a BPE vocabulary and the merge loop over one pre-token.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace star {

class BpeMergeTable {
 public:
  // (left, right) -> merged, applied in order of rank (lower first). A pair given twice keeps the
  // later rule, as HF's tokenizers does.
  void add(int32_t left, int32_t right, int32_t merged, int32_t rank);

  // Merges the symbols of one pre-token in place, exactly as HF's BPE (Word::merge_all): take the
  // lowest-rank adjacent pair (leftmost among equals), merge it, repeat until no pair merges.
  // O(n log n) in the number of symbols: a heap of candidates over a linked list.
  void apply(std::vector<int32_t>& symbols) const;

 private:
  struct Rule {
    int32_t rank;
    int32_t merged;
  };
  const Rule* find(int32_t left, int32_t right) const;

  std::unordered_map<uint64_t, Rule> rules_;
};

}  // namespace star
