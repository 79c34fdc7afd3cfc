// The OpenAI shim's request parsing: the first byte picks the endpoint (chat or completions), the
// rest is the JSON body. A body that parses must give a request the shim can act on: a chat has
// messages that each built-in format renders (or refuses by naming "messages"), a completion has
// its prompt, and the GenerateRequest carries the limits the body asked for. A refused body names
// its field first ("<field>: why"), as the error's `param` needs.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.h"
#include "star/tokenizer/chat_render.h"
#include "star/http/openai_request.h"

namespace {

void check_renders(star::ChatFormat format, const star::http::OpenAiRequest& request,
                   const star::ChatSpecialTokens& tokens) {
  star::Result<star::RenderedChat> rendered = star::render_chat(format, request.messages, tokens);
  if (!rendered.ok()) {
    STAR_FUZZ_CHECK(rendered.status().message().starts_with("messages"), rendered.status().to_string());
    return;
  }
  STAR_FUZZ_CHECK(!rendered->query.empty(), "a rendered chat without a query");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto endpoint = (data[0] & 1) != 0 ? star::http::Endpoint::kCompletions : star::http::Endpoint::kChat;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;

  star::Result<star::http::OpenAiRequest> request = star::http::parse_openai_request(endpoint, body);
  if (!request.ok()) {
    const std::string& message = request.status().message();
    STAR_FUZZ_CHECK(request.status().code() == star::StatusCode::kInvalidArgument, request.status().to_string());
    STAR_FUZZ_CHECK(message.find(": ") != std::string::npos && message.find(": ") > 0,
                    "an error that names no field: " + message);
    return 0;
  }
  if (endpoint == star::http::Endpoint::kChat) {
    STAR_FUZZ_CHECK(!request->messages.empty(), "an accepted chat without messages");
    check_renders(star::ChatFormat::kLlama3, *request, {"<|begin_of_text|>", "<|eot_id|>"});
    check_renders(star::ChatFormat::kLlama2, *request, {"<s>", "</s>"});
    check_renders(star::ChatFormat::kChatMl, *request, {"", "", "You are a helpful AI assistant."});
  }
  const star::v1::GenerateRequest generate = star::http::to_generate_request(*request, {1, 2}, {3}, 7);
  if (request->max_tokens) {
    STAR_FUZZ_CHECK(generate.max_tokens() == *request->max_tokens, "max_tokens did not reach the GenerateRequest");
  }
  STAR_FUZZ_CHECK(generate.stop_size() == static_cast<int>(request->stop.size()), "stop strings were lost");
  return 0;
}
