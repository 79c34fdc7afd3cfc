// RequestChannel: one accepted request's line between the engine thread and its gRPC handler.
// The engine pushes events (progress, sampled tokens, the end); the handler drains them and writes
// them to the stream. The other way, the handler (or Abort, or shutdown) raises the cancel flag,
// which the engine reads before its next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "star/common/status.h"
#include "star/engine/generator.h"

namespace star::server {

struct Phase1Progress {
  int blocks_done = 0;     // on rank 0
  int blocks_total = 0;    // on rank 0
  int context_blocks = 0;  // over every rank
};

// Tokens the engine chose, in order, as ids: the handler turns them into text (AnswerText). Pushes
// merge while the handler has not taken them yet.
struct SampledTokens {
  std::vector<int32_t> ids;
  bool ends_answer = false;        // the last id ends the answer (a stop id, or the max_tokens-th token)
  bool ends_with_stop_id = false;  // that last id is a stop id or an end id, which is no part of the answer
};

struct GenerateSummary {
  FinishReason finish_reason = FinishReason::kLength;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  double queue_seconds = 0;
  double phase1_seconds = 0;
  double first_token_seconds = 0;  // ranks started until the first token
  double decode_seconds = 0;
  std::string context_id;  // the encoded context used, if any
  uint64_t seed = 0;       // the sampling seed used
  SkipSoftmaxTiles phase1_skip_softmax_tiles;  // every rank's; zero for a cached context
  SkipSoftmaxTiles phase2_skip_softmax_tiles;
};

struct ContextCreated {
  std::string context_id;
};

// GenerateSummary, ContextCreated and a non-ok Status end a request; nothing follows them.
using ChannelEvent = std::variant<Phase1Progress, SampledTokens, GenerateSummary, ContextCreated, Status>;

bool is_final(const ChannelEvent& event);

// Why a request stopped early. The first reason raised wins. kStopString: the answer is complete
// (a stop string matched on the handler side); the engine only has to stop generating.
enum class CancelReason { kNone, kClient, kDeadline, kAbort, kShutdown, kStopString };

class RequestChannel {
 public:
  // Engine side.
  void push(ChannelEvent event);
  bool cancelled() const { return cancel_.load(std::memory_order_acquire) != CancelReason::kNone; }

  // Handler side: waits up to `timeout` for events and takes all that are there (maybe none).
  std::vector<ChannelEvent> wait(std::chrono::milliseconds timeout);
  // Returns true if this call set the reason (false: already cancelled).
  bool cancel(CancelReason reason);
  CancelReason cancel_reason() const { return cancel_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<ChannelEvent> events_;
  std::atomic<CancelReason> cancel_{CancelReason::kNone};
};

}  // namespace star::server
