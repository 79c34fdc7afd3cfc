#include "bpe_merges.h"

#include <queue>

namespace star {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct Candidate {
  int32_t rank;
  int32_t pos;     // index of the left symbol
  int32_t merged;  // the id the pair merges into, to recognise stale candidates
  // std::priority_queue pops the greatest: lowest rank, then leftmost position.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

}  // namespace

void BpeMergeTable::add(int32_t left, int32_t right, int32_t merged, int32_t rank) {
  rules_.insert_or_assign(pair_key(left, right), Rule{rank, merged});
}

const BpeMergeTable::Rule* BpeMergeTable::find(int32_t left, int32_t right) const {
  auto it = rules_.find(pair_key(left, right));
  return it == rules_.end() ? nullptr : &it->second;
}

void BpeMergeTable::apply(std::vector<int32_t>& ids) const {
  const auto n = static_cast<int32_t>(ids.size());
  if (n < 2) return;
  std::vector<Symbol> symbols(n);
  std::vector<Candidate> storage;
  storage.reserve(n);
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(storage));
  for (int32_t i = 0; i < n; ++i) symbols[i] = {ids[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  auto offer = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const Rule* rule = find(symbols[left].id, symbols[right].id)) {
      queue.push({rule->rank, left, rule->merged});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) offer(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // Stale when either symbol changed since the candidate was offered (HF checks the merged id).
    const Rule* rule = find(left.id, symbols[left.next].id);
    if (rule == nullptr || rule->merged != top.merged) continue;
    Symbol& right = symbols[left.next];
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) offer(left.prev);
    offer(top.pos);
  }

  ids.clear();
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace star
