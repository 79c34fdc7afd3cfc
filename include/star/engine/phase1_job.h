// Phase1Job: one sequence's Phase 1 on this rank as a series of chunks within a ChunkLimit (tokens,
// and cost: see chunk_limit.h), so a step engine can interleave a long context's encoding with other
// sequences' decoding (one chunk per step, maybe fused with their rows in one forward).
//
// The job runs this rank's steps of a BlockPlan in order and cuts each into chunks:
//   kExtendPrefix  local-causal chunks over the prefix KV (Star's anchor, Pulsar's sink and
//                  summaries), which the job holds across chunks and computes once per request.
//   kEncodeBlock   boundary-overlap lead tokens first, as local-causal chunks extending the prefix
//                  (their KV is dropped after the block's last chunk); then the block's chunks, chunk
//                  j attending the whole prefix and the block's chunks 0..j causally.
//   kRingSegment   one chunk, never split: the ring is collective per layer, so every rank's ring
//                  step must be its only chunk and the ranks meet in the same forward.
// With no limit a step is one chunk (its lead one more), which is what encode_context runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/attention/rocket/window_queries.h"
#include "star/attention/skip_softmax.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/chunk_limit.h"
#include "star/engine/engine_model.h"

namespace star {

struct Phase1Stats {
  double wall_seconds = 0;      // this rank's wall time in Phase 1, from start to its last chunk
  double compute_seconds = 0;   // CPU seconds of the forwards that ran its chunks (ring communication
                                // excluded; rows fused with a chunk count too)
  int64_t tokens_processed = 0; // every token fed through the model, prefix steps included
  int64_t shard_tokens = 0;     // tokens whose KV this rank holds afterwards
  size_t shard_bytes = 0;       // exact bytes of that KV
  SkipSoftmaxTiles skip_softmax_tiles;  // this rank's attention tiles (Skip Softmax on)
};

// Called on each rank after each block it encoded: (block index, blocks done here, blocks here).
using BlockProgress = std::function<void(int block_index, int done, int total)>;

// RocketKV's observation window: when `out` is set, the query host records the queries of the last
// `rows` tokens of its last block (the context's last tokens) into it.
struct WindowRecording {
  int64_t rows = 0;
  rocket::WindowQueries* out = nullptr;
};

// One chunk: its token ids and positions (views into the job, valid until finish_chunk) and the
// attention (owned by the job) that encodes them.
struct Phase1Chunk {
  std::span<const int32_t> tokens;
  std::span<const int32_t> positions;
  EngineAttention* attention = nullptr;
};

class Phase1Job {
 public:
  // Checks the plan against the communicator and the backend (every rank reaches the same verdict
  // before any work) and prepares this rank's chunks. `shard` must be empty, made by `model`; it,
  // `model`, `comm` and window.out must outlive the job (the plan need not). Every chunk's attention
  // runs Skip Softmax with prefill_scale_factor S (0: dense).
  static Result<std::unique_ptr<Phase1Job>> start(EngineModel& model, const BlockPlan& plan, Communicator& comm,
                                                  KvShard& shard, double prefill_scale_factor,
                                                  const WindowRecording& window, const ChunkLimit& limit,
                                                  BlockProgress progress = {});

  // The chunks rank `rank` runs for `plan` in total. Every rank computes every rank's count, so
  // all know when the slowest one finishes (ranks with fewer chunks idle in the later steps). It
  // walks the steps as the job does: the keys a chunk attends follow from the plan alone.
  static int64_t chunk_count(const BlockPlan& plan, int rank, const ChunkLimit& limit);

  bool done() const;
  // The next chunk. The caller runs it in a forward (maybe fused with other rows), then calls
  // finish_chunk() before asking for another.
  Result<Phase1Chunk> next_chunk();
  // Books the chunk that just ran: stats, block progress, the lead's KV dropped after a block, and
  // after the last chunk the prefix kept (keep_prefix_kv) and the shard's final size.
  Status finish_chunk();

  const Phase1Stats& stats() const { return stats_; }
  int64_t chunks_done() const { return chunks_done_; }
  int blocks_done() const { return blocks_done_; }
  int blocks_total() const { return blocks_total_; }

 private:
  // Where the job stands inside a step: its lead (boundary overlap) or its own tokens.
  enum class Part { kLead, kBody };

  Phase1Job(EngineModel& model, Communicator& comm, KvShard& shard, const BlockPlan& plan,
            double prefill_scale_factor, const WindowRecording& window, const ChunkLimit& limit,
            BlockProgress progress, std::unique_ptr<KvShard> prefix);

  int64_t part_tokens() const;   // tokens of the current part of the current step
  int64_t chunk_rows() const;    // rows of the next chunk
  void skip_empty_parts();       // from the start of a part, moves to the first part with a chunk
  int64_t window_begin() const;  // the first body row RocketKV records in the recorded step
  Result<std::unique_ptr<EngineAttention>> attention_for_chunk(int64_t rows);
  Status finish_step();
  Status finish_phase1();

  EngineModel& model_;
  Communicator& comm_;
  KvShard& shard_;
  RankPlan mine_;                       // this rank's steps (a copy: the plan need not outlive the job)
  std::vector<int64_t> segment_tokens_; // every rank's shard size, for ring steps
  AttentionWindow window_;
  double prefill_scale_factor_;
  WindowRecording recording_;
  ChunkLimit limit_;
  BlockProgress progress_;
  std::unique_ptr<KvShard> prefix_;

  size_t step_ = 0;
  Part part_ = Part::kLead;
  int64_t offset_ = 0;                  // tokens of the current part already run
  int64_t step_prefix_tokens_ = 0;      // prefix rows before the current step's lead
  int64_t block_first_ = 0;             // shard row where the current step's own tokens start
  size_t recorded_step_ = 0;            // the step whose last rows RocketKV records (if recording_)
  bool records_ = false;

  std::unique_ptr<EngineAttention> chunk_attention_;  // the chunk handed out, until finish_chunk
  int64_t chunk_rows_ = 0;
  bool chunk_records_ = false;
  rocket::WindowQueries chunk_window_;  // the queries the chunk recorded
  double chunk_cpu_start_ = 0;

  std::chrono::steady_clock::time_point started_;
  double communication_seconds_ = 0;
  double chunk_cpu_seconds_ = 0;
  int64_t chunks_done_ = 0;
  int blocks_done_ = 0;
  int blocks_total_ = 0;
  bool finished_ = false;
  Phase1Stats stats_;
};

// Ok when `model`'s backend runs every step of `plan` (every rank's, so all ranks reach the same
// verdict before any collective); otherwise its status, naming the algorithm. Phase1Job checks it;
// tools call it to refuse a plan before any request runs.
Status check_backend_runs(const EngineModel& model, const BlockPlan& plan);

// Runs the job's next chunk alone, in a forward of its own (no logits), and books it.
Status run_phase1_chunk(EngineModel& model, Phase1Job& job);

}  // namespace star
