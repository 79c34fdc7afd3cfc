#include "star/engine/phase1_executor.h"

#include <memory>

namespace star {

Result<Phase1Stats> encode_context(EngineModel& model, const BlockPlan& plan, Communicator& comm, KvShard& shard,
                                   const BlockProgress& progress, double prefill_scale_factor,
                                   const WindowRecording& window) {
  Result<std::unique_ptr<Phase1Job>> job =
      Phase1Job::start(model, plan, comm, shard, prefill_scale_factor, window, ChunkLimit(), progress);
  if (!job.ok()) return job.status();
  while (!(*job)->done()) {
    if (Status s = run_phase1_chunk(model, **job); !s.ok()) return s;
  }
  return (*job)->stats();
}

}  // namespace star
