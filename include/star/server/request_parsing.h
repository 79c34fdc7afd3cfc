// Turning gRPC requests into engine work on the handler thread: every check that can fail runs
// here, before the request is queued, so the ranks only ever see work they can do. Errors are
// INVALID_ARGUMENT with the message starting at the field's name (NOT_FOUND for an unknown
// context_id, RESOURCE_EXHAUSTED for a context larger than the context cache).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"
#include "star/engine/runtime_model.h"
#include "star/server/context_registry.h"
#include "star/server/server_options.h"
#include "star/server/work_queue.h"
#include "star/v1/star.pb.h"

namespace star::server {

struct RequestDefaults {
  const RuntimeModel& model;
  const AttentionConfig& attention;
  int ranks = 1;
  int64_t max_tokens = 128;
  int64_t reserve_tokens = 512;
  ServerLimits limits;
  int64_t context_cache_bytes = 0;  // per rank: a CreateContext whose KV needs more on a rank is refused
  SchedulerLimits scheduler;        // a request whose KV needs more than kv_cache_bytes on a rank is refused
};

Result<GenerateWork> parse_generate_request(const v1::GenerateRequest& request, const RequestDefaults& defaults,
                                            const ContextRegistry& contexts);

Result<CreateContextWork> parse_create_context_request(const v1::CreateContextRequest& request,
                                                       const RequestDefaults& defaults);

// A context's KV bytes on each rank after Phase 1, as encode_context will hold them.
std::vector<int64_t> context_rank_bytes(const BlockPlan& plan, int64_t kv_bytes_per_token);
// What a Generate reserves on each rank while it runs: its inline context's shards (none for an
// encoded one, `context_kept`) and room for its query and every answer token on the query host.
std::vector<int64_t> generate_rank_bytes(const BlockPlan& plan, bool context_kept, int64_t query_tokens,
                                         int64_t max_tokens, int64_t kv_bytes_per_token);
// That room for the query and the answer, which the scheduler may place on another rank
// (own_tokens_movable).
OwnTokens own_tokens_of(const BlockPlan& plan, const AttentionConfig& attention, int64_t query_tokens,
                        int64_t max_tokens, int64_t kv_bytes_per_token);

// INVALID_ARGUMENT "<field>[i]: <id> is outside the vocabulary [0, V)" for the first bad id.
Status check_token_ids(const char* field, std::span<const int32_t> ids, int64_t vocab_size);

}  // namespace star::server
