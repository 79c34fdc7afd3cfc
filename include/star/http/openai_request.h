// The body of POST /v1/chat/completions and /v1/completions, checked field by field. Errors are
// INVALID_ARGUMENT "<field>: <why>" so that the error's param names the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/common/status.h"
#include "star/http/api_error.h"
#include "star/tokenizer/chat_render.h"
#include "star/v1/star.pb.h"

namespace star::http {

enum class Endpoint { kChat, kCompletions };

// The `star` extension object: {"context_id": "...", "context": "...", "attention": {...}}.
struct StarExtension {
  std::string context_id;  // answer from a context made by CreateContext (no Phase 1)
  std::string context;     // completions: text encoded as the context, the prompt being the query
  std::optional<v1::AttentionConfig> attention;  // keys of configs/*.json
};

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<ChatMessage> messages;  // chat
  bool add_generation_prompt = true;  // chat (vLLM's extension): end with the assistant header
  std::string prompt;                 // completions: text (special-token text read as the token)
  std::optional<std::vector<int32_t>> prompt_ids;  // completions: token ids, used as given
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  std::optional<uint64_t> max_tokens;  // max_completion_tokens, else max_tokens
  std::string max_tokens_field = "max_tokens";  // the one the client used, for errors
  double temperature = 1.0;           // OpenAI's defaults
  double top_p = 1.0;
  int32_t top_k = 0;                  // 0 (or -1): every token
  std::optional<uint64_t> seed;       // unset: a fresh random seed
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  StarExtension star;
};

Result<OpenAiRequest> parse_openai_request(Endpoint endpoint, const nlohmann::json& body);

// The client fields a backend error about this request's fields names (api_error.h).
ClientFields client_fields(const OpenAiRequest& request);

// The GenerateRequest for the prompt's token ids (or the session's query ids). `seed` fills an
// unset seed.
v1::GenerateRequest to_generate_request(const OpenAiRequest& request, std::vector<int32_t> context_ids,
                                        std::vector<int32_t> query_ids, uint64_t seed);

}  // namespace star::http
