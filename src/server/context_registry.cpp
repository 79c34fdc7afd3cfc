#include "star/server/context_registry.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "star/attention/attention_config_io.h"

namespace star::server {

namespace {

bool same_config(const AttentionConfig& a, const AttentionConfig& b) {
  return attention_config_to_json(a) == attention_config_to_json(b);
}

}  // namespace

ContextRegistry::ContextRegistry(int64_t budget_bytes_per_rank, int ranks)
    : budget_(budget_bytes_per_rank), ranks_(ranks), rng_(std::random_device{}()) {}

std::string ContextRegistry::next_id() {
  std::lock_guard lock(mutex_);
  char suffix[9];
  std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rng_()));
  return "ctx-" + std::to_string(++created_) + "-" + suffix;
}

std::optional<ContextEntry> ContextRegistry::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  for (const ContextEntry& e : entries_) {
    if (e.id == id) return e;
  }
  return std::nullopt;
}

std::optional<std::string> ContextRegistry::find_same(std::span<const int32_t> context_ids,
                                                      const AttentionConfig& attention) const {
  std::lock_guard lock(mutex_);
  for (const ContextEntry& e : entries_) {
    if (std::ranges::equal(*e.context_ids, context_ids) && same_config(e.attention, attention)) return e.id;
  }
  return std::nullopt;
}

void ContextRegistry::start_query(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const ContextEntry& e) { return e.id == id; });
  if (it == entries_.end()) return;
  ContextEntry entry = std::move(*it);
  entries_.erase(it);
  entry.last_used = Clock::now();
  ++entry.queries;
  ++entry.running;
  entries_.push_back(std::move(entry));
}

void ContextRegistry::end_query(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const ContextEntry& e) { return e.id == id; });
  if (it != entries_.end() && it->running > 0) --it->running;
}

Status ContextRegistry::admit(ContextEntry entry) {
  std::lock_guard lock(mutex_);
  if (entry.rank_bytes.size() != static_cast<size_t>(ranks_)) {
    return internal_error("context " + entry.id + ": bytes for " + std::to_string(entry.rank_bytes.size()) +
                          " ranks, expected " + std::to_string(ranks_));
  }
  for (int r = 0; r < ranks_; ++r) {
    if (entry.rank_bytes[r] > budget_) {
      return resource_exhausted("context: its KV needs " + std::to_string(entry.rank_bytes[r]) + " bytes on rank " +
                                std::to_string(r) + ", more than the context cache's " + std::to_string(budget_) +
                                " bytes per rank (--context-cache-bytes)");
    }
  }
  std::vector<int64_t> used(ranks_, 0), read(ranks_, 0);
  for (const ContextEntry& e : entries_) {
    for (int r = 0; r < ranks_; ++r) {
      used[r] += e.rank_bytes[r];
      if (e.running > 0) read[r] += e.rank_bytes[r];
    }
  }
  for (int r = 0; r < ranks_; ++r) {
    if (read[r] + entry.rank_bytes[r] > budget_) {
      return resource_exhausted("context: its KV needs " + std::to_string(entry.rank_bytes[r]) + " bytes on rank " +
                                std::to_string(r) + " and the contexts that running queries read hold " +
                                std::to_string(read[r]) + " of the context cache's " + std::to_string(budget_) +
                                " bytes per rank there (--context-cache-bytes); retry when those queries end");
    }
  }
  auto fits = [&] {
    for (int r = 0; r < ranks_; ++r) {
      if (used[r] + entry.rank_bytes[r] > budget_) return false;
    }
    return true;
  };
  // Ends: without every unread context the new one fits (checked above).
  for (size_t i = 0; !fits();) {
    if (entries_[i].running > 0) {
      ++i;
      continue;
    }
    for (int r = 0; r < ranks_; ++r) used[r] -= entries_[i].rank_bytes[r];
    forget(i);
  }
  entry.last_used = Clock::now();
  entries_.push_back(std::move(entry));
  return ok_status();
}

bool ContextRegistry::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].id == id) {
      forget(i);
      return true;
    }
  }
  return false;
}

void ContextRegistry::forget(size_t index) {
  released_.push_back(entries_[index].id);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

std::vector<std::string> ContextRegistry::take_released() {
  std::lock_guard lock(mutex_);
  return std::exchange(released_, {});
}

std::vector<ContextEntry> ContextRegistry::list() const {
  std::lock_guard lock(mutex_);
  return {entries_.rbegin(), entries_.rend()};
}

std::vector<int64_t> ContextRegistry::rank_bytes_used() const {
  std::lock_guard lock(mutex_);
  std::vector<int64_t> used(ranks_, 0);
  for (const ContextEntry& e : entries_) {
    for (int r = 0; r < ranks_; ++r) used[r] += e.rank_bytes[r];
  }
  return used;
}

}  // namespace star::server
