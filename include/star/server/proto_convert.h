// Between the star.v1 messages and the engine's types.
#pragma once

#include <grpcpp/support/status.h>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/engine/generator.h"
#include "star/v1/star.pb.h"

namespace star::server {

// `base` with every field the override sets; validated. Errors start with "attention: ".
Result<AttentionConfig> apply_attention_override(const AttentionConfig& base, const v1::AttentionConfig& override);
// Every field set.
v1::AttentionConfig attention_to_proto(const AttentionConfig& config);

v1::FinishReason finish_reason_to_proto(FinishReason reason);
const char* finish_reason_proto_name(v1::FinishReason reason);  // "stop", "length", "cancelled"

grpc::Status to_grpc_status(const Status& status);

}  // namespace star::server
