// The step engine: every rank runs the same steps. Rank 0 (the scheduler) decides what a step does
// and broadcasts it as one StepMessage; each rank applies it and runs ONE fused forward: at most one
// Phase 1 chunk of the oldest sequence still encoding, then the Phase 2 rows of every running
// sequence (its query on its first Phase 2 step, then its last sampled token). Rank 0 samples every
// sequence that produced logits and reports what happened as SequenceEvents.
//
// The tokens rank 0 samples in step k reach the other ranks in step k+1's message (`sampled`), so
// one broadcast serves a step. Every rank derives its state from the messages alone, in sequence-id
// order, so every rank builds the same forward: a stop id / end id (unless ignore_eos) or the
// max_tokens-th token ends a sequence on rank 0 at once (kDone) and on every rank when that token
// arrives in `sampled`; it never needs a forward. So rank 0 sends every kToken's token back in the
// next `sampled` (the last one too), or the id in `finished`: until then the other ranks hold the
// sequence. Stop strings are the scheduler's business: it sends the id in `finished`. A sequence
// dropped by `finished` gets no event.
//
// A request error (a bad plan, a token outside the vocabulary, a backend that cannot run the
// algorithm) fails that sequence only, with the same verdict on every rank (kFailed); a failed
// collective fails the step (INTERNAL), and the engine should not be stepped again.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/attention/skip_softmax.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/engine/generator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"

namespace star {

// A request as every rank learns it.
struct SequenceSpec {
  int64_t id = 0;                    // chosen by rank 0, unique while running
  std::string context_id;            // an encoded context every rank holds ...
  std::vector<int32_t> context_ids;  // ... or an inline one (maybe empty), encoded in chunks
  AttentionConfig attention;         // for the inline context
  std::vector<int32_t> query_ids;    // empty: encode the context only and keep it as
  std::string keep_as;               //   `keep_as` (CreateContext); no Phase 2. With keep_as set,
                                     //   query_ids only end RocketKV's observation window.
  GenerationOptions generation;      // stop_strings travel but the engine never reads them
  // The rank keeping the query's and the answer's KV and attending them, where rank 0 moved them
  // off the query host to share that work (BatchedQuerySlot::own_host: the same bits); -1: the
  // query host.
  int own_host = -1;
};

// Whether rank 0 may move the own tokens of a request with this plan and attention off its query
// host (SequenceSpec::own_host): a plain context (no bounded window, no RocketKV, no Skip Softmax)
// of which the query host holds part, so that its context partial is a real one (an empty shard's
// merged in after the gather could turn a -0 into +0).
bool own_tokens_movable(const BlockPlan& plan, const AttentionConfig& attention);

// Rank 0 -> every rank, once per step.
struct StepMessage {
  std::vector<SequenceSpec> admitted;
  std::vector<std::pair<int64_t, int32_t>> sampled;  // (sequence id, token) chosen last step
  std::vector<int64_t> finished;                      // drop now (stop string, cancelled, deadline, aborted)
  std::vector<std::string> release;                   // encoded contexts to drop
  std::vector<std::string> keep;                      // contexts encoded last step that rank 0 admitted (others dropped)
  // (sequence id, rank): its own tokens move to that rank before this step's forward. Only a
  // decoding sequence's that may move them (OwnTokenLoads' may_move), and only where
  // StepEngine::moves_own_tokens(); anything else is INTERNAL (the scheduler broke). An id no
  // longer running (its last token came in this message) is skipped.
  std::vector<std::pair<int64_t, int32_t>> moved;
  bool shutdown = false;  // the loop ends: the step applies nothing and runs nothing
};

// The message as bytes (protobuf, proto/star/engine/step_wire.proto), and back. Decoding bytes that
// are not a StepMessage (truncated, corrupt) gives INVALID_ARGUMENT, never a crash.
std::string encode_step(const StepMessage& message);
Result<StepMessage> decode_step(std::string_view bytes);

// Collective: rank 0 broadcasts `message` (what the others pass is ignored) and every rank returns
// rank 0's message as decoded from the wire, so rank 0 steps on exactly what the others see.
Result<StepMessage> exchange_step(Communicator& comm, const StepMessage& message);

// What a sequence cost, on the rank that reports it.
struct SequenceStats {
  double phase1_seconds = 0;        // wall time from admission until its context was encoded
  double first_token_seconds = 0;   // context encoded until its first token was chosen
  double decode_seconds = 0;        // first token until the last
  int64_t floats_sent = 0;          // this rank's share of the Phase 2 all-gathers (by rows)
  double decode_gather_merge_seconds = 0;  // its share of all-gather + merge time after the first token
  SkipSoftmaxTiles skip_softmax_tiles;     // Phase 2 attention tiles, this rank's
  SkipSoftmaxTiles phase1_skip_softmax_tiles;  // its own context's Phase 1 tiles, every rank's (zero
                                               // when it reads a kept context)
  std::vector<float> query_logits;  // rank 0, in the first kToken's stats only: [query tokens, vocab]
                                    // when generation.return_query_logits
};

// What one step did. Rank 0 gets every event; the other ranks get kPhase1Progress (their own
// blocks), kContextEncoded and kFailed, which every rank reaches in the same step.
struct SequenceEvent {
  enum class Kind { kPhase1Progress, kToken, kDone, kContextEncoded, kFailed };
  int64_t id = 0;
  Kind kind = Kind::kToken;
  int32_t token = -1;                // kToken
  bool is_stop = false;              // kToken: a stop id / end id (the sequence ends with it)
  int block_index = 0;               // kPhase1Progress: the block this rank just encoded,
  int blocks_done = 0;               //   this rank's blocks of the context done so far ...
  int blocks_total = 0;              //   ... out of its blocks
  FinishReason finish_reason = FinishReason::kLength;  // kDone (kStop: stop id; kLength: max_tokens)
  Status error;                      // kFailed (a request error, the same on every rank)
  SequenceStats stats;               // kDone, kContextEncoded (and the first kToken's query_logits)
  // kDone, kContextEncoded: the sequence's own context (null for one it borrowed or shared), valid
  // until the next step().
  const EncodedContext* context = nullptr;
};

// What rank 0's scheduler balances by moving own tokens (StepMessage::moved), in the cost model's
// token-equivalents (chunk_limit.h), before the next step: each rank's Phase 1 chunk in it, the
// steps the slowest rank has left of that Phase 1, and the attention each decoding sequence gives
// its own tokens a step, with whether they may move (StepSequence::own_tokens_may_move).
struct OwnTokenLoads {
  std::vector<double> chunk;     // per rank (phase1_chunk_loads)
  int64_t chunk_steps_left = 0;  // 0: no Phase 1 runs
  struct Sequence {
    int64_t id = 0;
    int host = 0;      // the rank holding them now
    double load = 0;
    bool may_move = false;
  };
  std::vector<Sequence> decoding;  // by id
};

struct StepLimits {
  int64_t max_num_batched_tokens = 2048;  // Phase 1 tokens of one step's chunk (0: a block at once)
  int64_t max_chunk_cost = 0;             // token-equivalents of one step's chunk (chunk_limit.h; 0: off)
};

// One per rank; collective: every rank calls step() with the same message in turn.
class StepEngine {
 public:
  StepEngine(const RuntimeModel& model, Communicator& comm, StepLimits limits);
  // Without the model's tokenizer there is no sentence-end table: a request with boundary_snap is
  // refused (FAILED_PRECONDITION). Every rank of one engine must be built the same way.
  StepEngine(EngineModel& model, Communicator& comm, StepLimits limits);
  ~StepEngine();
  StepEngine(const StepEngine&) = delete;
  StepEngine& operator=(const StepEngine&) = delete;

  // Applies `message`, runs the step's forward, samples (rank 0). A malformed message (a sampled
  // id not waiting for a token, an admitted id already running) is INTERNAL: the scheduler broke.
  Result<std::vector<SequenceEvent>> step(const StepMessage& message);
  // This rank's stats of a sequence still held (after its last forward, until the step that
  // drops it), or null.
  const SequenceStats* stats(int64_t id) const;

  bool idle() const;  // nothing running, encoding or waiting for a keep decision
  int64_t running() const;  // sequences admitted and not yet dropped
  // Whether rank 0 may move own tokens (StepMessage::moved): a backend that moves shards, more
  // than one rank.
  bool moves_own_tokens() const;
  OwnTokenLoads own_token_loads() const;

  // A context kept with `keep_as`, or null (a borrowed one is not an EncodedContext: null too).
  const EncodedContext* context(const std::string& id) const;
  // Takes a kept context back out: NOT_FOUND if absent, FAILED_PRECONDITION while a sequence
  // reads it. Every rank takes the same ids between the same steps.
  Result<std::unique_ptr<EncodedContext>> take_context(const std::string& id);
  // Serves sequences from a context encoded elsewhere (`shard`, laid out as `layout`) under `id`
  // until `release`d; the caller keeps it alive and unchanged until then. Every rank lends the
  // same ids between the same steps.
  Status borrow_context(const std::string& id, const ShardLayout& layout, const KvShard& shard);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace star
