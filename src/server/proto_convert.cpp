#include "star/server/proto_convert.h"

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "star/attention/attention_config_io.h"
#include "star/attention/sparse_attention_config_io.h"

namespace star::server {

Result<AttentionConfig> apply_attention_override(const AttentionConfig& base, const v1::AttentionConfig& o) {
  nlohmann::json j = attention_config_to_json(base);
  if (o.has_algorithm()) j["algorithm"] = o.algorithm();
  if (o.has_block_size()) j["block_size"] = o.block_size();
  if (o.has_anchor_size()) j["anchor_size"] = o.anchor_size();
  if (o.has_anchor_positions()) j["anchor_positions"] = o.anchor_positions();
  if (o.has_boundary_overlap()) j["boundary_overlap"] = o.boundary_overlap();
  if (o.has_boundary_snap()) j["boundary_snap"] = o.boundary_snap();
  if (o.has_sink_tokens()) j["sink_tokens"] = o.sink_tokens();
  if (o.has_chunk_tokens()) j["chunk_tokens"] = o.chunk_tokens();
  if (o.has_summary_fraction()) {
    j["summary_fraction"] = o.summary_fraction();
    if (!o.has_summary_chunks()) j["summary_chunks"] = 0;
  }
  if (o.has_summary_chunks()) j["summary_chunks"] = o.summary_chunks();
  if (o.has_scoring()) j["scoring"] = o.scoring();
  if (o.has_position_mode()) j["position_mode"] = o.position_mode();
  if (o.has_keep_prefix_kv()) j["keep_prefix_kv"] = o.keep_prefix_kv();
  if (o.has_streaming_sink()) j["streaming_sink"] = o.streaming_sink();
  if (o.has_streaming_window()) j["streaming_window"] = o.streaming_window();
  if (o.has_sparse_attention()) {
    std::string text;
    if (const auto printed = google::protobuf::util::MessageToJsonString(o.sparse_attention(), &text); !printed.ok()) {
      return invalid_argument("attention: sparse_attention: " + std::string(printed.message()));
    }
    j["sparse_attention"] = nlohmann::json::parse(text);
  }
  Result<AttentionConfig> config = attention_config_from_json(j);
  if (!config.ok()) return invalid_argument("attention: " + config.status().message());
  return config;
}

v1::AttentionConfig attention_to_proto(const AttentionConfig& c) {
  v1::AttentionConfig p;
  p.set_algorithm(c.algorithm);
  p.set_block_size(c.block_size);
  p.set_anchor_size(c.anchor_size);
  p.set_anchor_positions(c.anchor_positions);
  p.set_boundary_overlap(c.boundary_overlap);
  p.set_boundary_snap(c.boundary_snap);
  p.set_sink_tokens(c.sink_tokens);
  p.set_chunk_tokens(c.chunk_tokens);
  p.set_summary_fraction(c.summary_fraction);
  p.set_summary_chunks(c.summary_chunks);
  p.set_scoring(c.scoring);
  p.set_position_mode(c.position_mode);
  p.set_keep_prefix_kv(c.keep_prefix_kv);
  p.set_streaming_sink(c.streaming_sink);
  p.set_streaming_window(c.streaming_window);
  // A JSON object printed by nlohmann::json always parses into a Struct, so the status is not needed.
  const auto parsed = google::protobuf::util::JsonStringToMessage(sparse_attention_config_to_json(c.sparse).dump(),
                                                                  p.mutable_sparse_attention());
  static_cast<void>(parsed);
  return p;
}

v1::FinishReason finish_reason_to_proto(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return v1::FINISH_REASON_STOP;
    case FinishReason::kLength: return v1::FINISH_REASON_LENGTH;
    case FinishReason::kCancelled: return v1::FINISH_REASON_CANCELLED;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

const char* finish_reason_proto_name(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_STOP: return "stop";
    case v1::FINISH_REASON_LENGTH: return "length";
    case v1::FINISH_REASON_CANCELLED: return "cancelled";
    default: return "unspecified";
  }
}

grpc::Status to_grpc_status(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

}  // namespace star::server
