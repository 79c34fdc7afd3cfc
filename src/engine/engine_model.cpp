#include "star/engine/engine_model.h"

#include <string>

namespace star {
namespace {

Status no_rocket(const EngineModel& model) {
  return unimplemented("sparse_attention 'rocket': not available on the " + std::string(model.backend_name()) +
                       " backend");
}

}  // namespace

Status EngineModel::supports_rocket() const { return no_rocket(*this); }

Result<std::unique_ptr<EngineAttention>> EngineModel::recording_queries(std::unique_ptr<EngineAttention>, int64_t,
                                                                        rocket::WindowQueries&) {
  return no_rocket(*this);
}

Result<std::vector<float>> EngineModel::shard_keys(const KvShard&, int64_t) { return no_rocket(*this); }

Result<std::unique_ptr<KvShard>> EngineModel::compacted_shard(const KvShard&,
                                                              const std::vector<std::vector<std::vector<int64_t>>>&,
                                                              const RocketConfig&) {
  return no_rocket(*this);
}

}  // namespace star
