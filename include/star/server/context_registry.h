// ContextRegistry: rank 0's book of the encoded contexts that every rank keeps (CreateContext).
// It decides ids and evictions; the ranks hold the KV (StepEngine) and learn each decision from
// the step message rank 0 broadcasts (keep, release), so every rank's set of contexts stays the same.
//
// Budget: on every rank, the KV bytes of all kept contexts stay within `budget_bytes_per_rank`;
// admitting a new context evicts the least recently used ones until it fits, never one that a
// running query reads (its ranks would keep its KV until the query ends, past the budget, while new
// queries could no longer find it).
// Thread-safe: handlers look contexts up while the engine thread admits and uses them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/server/work_queue.h"

namespace star::server {

struct ContextEntry {
  std::string id;
  std::shared_ptr<const std::vector<int32_t>> context_ids;
  AttentionConfig attention;
  std::vector<int64_t> rank_bytes;  // [ranks]
  double phase1_seconds = 0;
  int64_t queries = 0;  // queries started on it
  int64_t running = 0;  // of those, the ones still running: it is not evicted while any runs
  Clock::time_point last_used;
  int64_t tokens() const { return static_cast<int64_t>(context_ids->size()); }
};

class ContextRegistry {
 public:
  ContextRegistry(int64_t budget_bytes_per_rank, int ranks);

  // A fresh id, "ctx-<n>-<8 hex digits>".
  std::string next_id();

  std::optional<ContextEntry> find(const std::string& id) const;
  // The id of a kept context with exactly these ids and this configuration.
  std::optional<std::string> find_same(std::span<const int32_t> context_ids, const AttentionConfig& attention) const;
  // A query starts on it: it becomes the most recently used, and stays kept until end_query.
  void start_query(const std::string& id);
  // That query ended (a context removed meanwhile is ignored).
  void end_query(const std::string& id);

  // After Phase 1 of a new context on every rank: keeps it, evicting least recently used contexts
  // that no query reads until every rank's bytes fit; RESOURCE_EXHAUSTED (nothing evicted) when it
  // alone, or with the contexts running queries read, exceeds the budget on some rank. Evicted ids
  // join the ids to release.
  Status admit(ContextEntry entry);
  // DeleteContext: forgets it now (later lookups fail) and queues it for release on the ranks.
  bool remove(const std::string& id);
  // The forgotten ids the ranks still hold; the engine sends them with its next step message.
  std::vector<std::string> take_released();

  std::vector<ContextEntry> list() const;  // most recently used first
  std::vector<int64_t> rank_bytes_used() const;
  int64_t budget_bytes_per_rank() const { return budget_; }

 private:
  void forget(size_t index);  // with mutex_ held

  const int64_t budget_;
  const int ranks_;
  mutable std::mutex mutex_;
  std::vector<ContextEntry> entries_;  // least recently used first
  std::vector<std::string> released_;
  uint64_t created_ = 0;
  std::mt19937_64 rng_;  // a random part keeps one run's ids from naming another run's contexts
};

}  // namespace star::server
