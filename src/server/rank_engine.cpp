#include "star/server/rank_engine.h"

#include <chrono>

#include "star/dist/broadcast_string.h"

namespace star::server {

void RankEngine::release(std::span<const std::string> ids) {
  for (const std::string& id : ids) contexts_.erase(id);
}

Result<GenerateOutcome> RankEngine::generate(const EngineCommand& command, const BlockProgress& progress,
                                             const TokenSink& sink) {
  GenerateOutcome out;
  if (!command.context_id.empty()) {
    auto it = contexts_.find(command.context_id);
    if (it == contexts_.end()) {
      return internal_error("rank " + std::to_string(comm_.rank()) + " holds no context '" + command.context_id + "'");
    }
    out.context_tokens = it->second.context_tokens;
    Result<GenerationResult> generation =
        answer_query(model_, comm_, it->second, command.query_ids, command.generation, sink);
    if (!generation.ok()) return generation.status();
    out.generation = std::move(*generation);
    return out;
  }

  const InferenceRequest request{command.context_ids, command.query_ids, command.attention, command.generation};
  if (Status s = validate_request(model_.llama->config(), request); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  const int64_t reserve = static_cast<int64_t>(command.query_ids.size()) + command.generation.max_tokens;
  Result<EncodedContext> context =
      encode_request_context(model_, comm_, command.context_ids, command.attention, reserve, progress);
  if (!context.ok()) return context.status();
  out.phase1_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.context_tokens = context->context_tokens;
  out.phase1_skip_softmax_tiles = context->phase1_skip_softmax_tiles;
  Result<GenerationResult> generation =
      answer_query(model_, comm_, *context, command.query_ids, command.generation, sink);
  if (!generation.ok()) return generation.status();
  out.generation = std::move(*generation);
  return out;
}

Result<const EncodedContext*> RankEngine::create_context(const EngineCommand& command, const BlockProgress& progress,
                                                         const AdmitPolicy& admit) {
  Result<EncodedContext> encoded = encode_request_context(model_, comm_, command.context_ids, command.attention,
                                                          command.reserve_tokens, progress);
  std::string decision_text;
  if (comm_.rank() == 0) decision_text = encode_decision(admit ? admit(encoded) : AdmitDecision{});
  if (Status s = broadcast_string(comm_, decision_text, 0); !s.ok()) return s;
  Result<AdmitDecision> decision = decode_decision(decision_text);
  if (!decision.ok()) return decision.status();
  release(decision->release);
  if (!encoded.ok()) {
    if (decision->keep) {
      return internal_error("rank " + std::to_string(comm_.rank()) + " could not encode context '" +
                            command.context_id + "' that rank 0 kept: " + encoded.status().to_string());
    }
    return encoded.status();
  }
  if (!decision->keep) return failed_precondition("context '" + command.context_id + "' was not kept");
  auto [it, inserted] = contexts_.insert_or_assign(command.context_id, std::move(*encoded));
  return &it->second;
}

}  // namespace star::server
