// Work accepted by the gRPC handlers, waiting for the engine thread: a bounded FIFO.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/engine/generator.h"
#include "star/server/batch_scheduler.h"
#include "star/server/request_channel.h"

namespace star::server {

using Clock = std::chrono::steady_clock;

// One Generate call, checked against the model and tokenized.
struct GenerateWork {
  std::vector<int32_t> context_ids;  // an inline context (maybe empty) ...
  std::string context_id;            // ... or the id of an encoded one
  std::vector<int32_t> query_ids;
  AttentionConfig attention;         // for an inline context
  int context_blocks = 0;            // of the inline context's plan
  GenerationOptions generation;
  std::vector<int64_t> kv_rank_bytes;  // KV it reserves on each rank while it runs (BatchScheduler)
  OwnTokens own;                       // the query's and answer's part of it, which may move
};

// One CreateContext call.
struct CreateContextWork {
  std::vector<int32_t> context_ids;
  AttentionConfig attention;
  int context_blocks = 0;      // of the context's plan
  int64_t reserve_tokens = 0;  // KV room for query and answer on the query host
  std::vector<int64_t> kv_rank_bytes;  // KV it reserves on each rank while its Phase 1 runs
};

// Frees deleted contexts on every rank (DeleteContext queues one so that idle ranks free at once).
struct ReleaseWork {};

struct Job {
  std::variant<GenerateWork, CreateContextWork, ReleaseWork> work;
  std::shared_ptr<RequestChannel> channel;  // null for ReleaseWork
  std::string request_id;
  Clock::time_point accepted = Clock::now();
};

class WorkQueue {
 public:
  explicit WorkQueue(size_t capacity) : capacity_(capacity) {}

  // RESOURCE_EXHAUSTED when `capacity` jobs wait already (ReleaseWork is never refused for that),
  // UNAVAILABLE once closed.
  Status push(std::shared_ptr<Job> job);
  // Waits until a job the engine may take is queued (true) or the queue is closed and empty (false).
  bool wait_for_work();
  // The queued jobs, first in first out (the engine decides which to take).
  std::vector<std::shared_ptr<Job>> waiting() const;
  // Takes a queued job out for the engine; false when it is no longer queued (its handler took it
  // out) or when it is a request and the shutdown's cut has passed (see close()). A request taken
  // counts as running until ended() is called for it.
  bool take(const std::shared_ptr<Job>& job);
  // The engine is done with a request it took (whatever the outcome).
  void ended();
  // Takes a job out before the engine got to it; false when it is no longer queued.
  bool remove(const std::shared_ptr<Job>& job);
  // Refuses new jobs from now on; the queued ones can still be taken until `cut`, the shutdown's
  // deadline. From then on no request starts: their handlers, which cut them at the same moment,
  // take them back out and answer them, and the engine must not race them to it.
  void close(Clock::time_point cut = Clock::time_point::max());

  size_t size() const;  // requests waiting
  size_t running() const;  // requests taken and not ended
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> jobs_;
  size_t requests_ = 0;  // jobs_ without ReleaseWork
  size_t running_ = 0;
  bool closed_ = false;
  Clock::time_point cut_ = Clock::time_point::max();
};

}  // namespace star::server
