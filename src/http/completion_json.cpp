#include "star/http/completion_json.h"

#include <chrono>
#include <random>

namespace star::http {

namespace {

using json = nlohmann::json;

std::string random_hex(int digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < digits; ++i) s += kHex[rng() % 16];
  return s;
}

}  // namespace

const char* openai_finish_reason(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH: return "length";
    case v1::FINISH_REASON_CANCELLED: return "abort";
    default: return "stop";
  }
}

json usage_json(const v1::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens()},
          {"completion_tokens", u.completion_tokens()},
          {"total_tokens", u.prompt_tokens() + u.completion_tokens()},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens()}}}};
}

CompletionJson::CompletionJson(Endpoint endpoint, std::string model, bool include_usage)
    : endpoint_(endpoint),
      model_(std::move(model)),
      include_usage_(include_usage),
      id_((endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + random_hex(24)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()) {}

json CompletionJson::whole(const std::string& text, const v1::GenerateDone& done) const {
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", openai_finish_reason(done.finish_reason())}};
  if (endpoint_ == Endpoint::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  return {{"id", id_},
          {"object", endpoint_ == Endpoint::kChat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({choice})},
          {"usage", usage_json(done.usage())}};
}

json CompletionJson::chunk(json choice) const {
  json out = {{"id", id_},
              {"object", endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", json::array({std::move(choice)})}};
  if (include_usage_) out["usage"] = nullptr;
  return out;
}

json CompletionJson::role_chunk() const {
  return chunk({{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                {"finish_reason", nullptr}});
}

json CompletionJson::text_chunk(const std::string& text) const {
  if (endpoint_ == Endpoint::kChat) {
    return chunk({{"index", 0}, {"delta", {{"content", text}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
  }
  return chunk({{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
}

json CompletionJson::finish_chunk(v1::FinishReason reason) const {
  if (endpoint_ == Endpoint::kChat) {
    return chunk({{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr},
                  {"finish_reason", openai_finish_reason(reason)}});
  }
  return chunk({{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", openai_finish_reason(reason)}});
}

json CompletionJson::usage_chunk(const v1::Usage& usage) const {
  json out = chunk(json());
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace star::http
