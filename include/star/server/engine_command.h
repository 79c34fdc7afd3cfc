// EngineCommand: what rank 0 broadcasts so that every rank runs the same collective engine call.
// Sent as JSON (broadcast_string):
//   {"op": "generate", "release": [...], "context_id": "ctx-1" | "context_ids": [...],
//    "attention": {...}, "query_ids": [...], "generation": {...}}
//   {"op": "create_context", "release": [...], "context_id": "ctx-2", "context_ids": [...],
//    "attention": {...}, "reserve_tokens": 256}
//   {"op": "release", "release": [...]}      {"op": "shutdown"}
// "release": contexts every rank drops before running the command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/generator.h"

namespace star::server {

struct EngineCommand {
  enum class Op { kGenerate, kCreateContext, kRelease, kShutdown };
  Op op = Op::kRelease;
  std::vector<std::string> release;
  std::string context_id;            // generate: an encoded context (then context_ids is empty)
  std::vector<int32_t> context_ids;  // generate: an inline context; create_context: the context
  AttentionConfig attention;
  int64_t reserve_tokens = 0;
  std::vector<int32_t> query_ids;
  GenerationOptions generation;
};

std::string encode_command(const EngineCommand& command);
Result<EngineCommand> decode_command(const std::string& text);

// Collective: rank 0 sends, every other rank receives.
Status send_command(Communicator& comm, const EngineCommand& command);
Result<EngineCommand> receive_command(Communicator& comm);

// After a create_context command, rank 0's verdict on the new context, broadcast the same way.
struct AdmitDecision {
  bool keep = false;
  std::vector<std::string> release;  // contexts evicted to make room
};

std::string encode_decision(const AdmitDecision& decision);
Result<AdmitDecision> decode_decision(const std::string& text);

}  // namespace star::server
