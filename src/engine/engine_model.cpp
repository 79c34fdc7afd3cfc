#include "star/engine/engine_model.h"

#include <string>

namespace star {
namespace {

Status no_rocket(const EngineModel& model) {
  return unimplemented("sparse_attention 'rocket': not available on the " + std::string(model.backend_name()) +
                       " backend");
}

Status no_moves(const EngineModel& model) {
  return unimplemented("moving a shard between ranks: not available on the " + std::string(model.backend_name()) +
                       " backend");
}

}  // namespace

Status EngineModel::supports_rocket() const { return no_rocket(*this); }

Result<std::vector<std::byte>> EngineModel::shard_rows(const KvShard&) { return no_moves(*this); }

Result<std::unique_ptr<KvShard>> EngineModel::shard_from_rows(std::span<const std::byte>, int64_t, int64_t) {
  return no_moves(*this);
}

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
