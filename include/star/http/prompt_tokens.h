// The token ids a request sends: chat messages rendered with the model's chat format and tokenized
// by the backend with parse_special (so that "<|eot_id|>" in the rendering is one special id),
// sent as TokenInput; a completion prompt tokenized with BOS (after star.context, when given), or
// its token ids as given. Special-token text inside message contents, prompts and star.context is
// read as the special token too, as in vLLM. With star.context_id the whole chat is the query.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "star/http/api_error.h"
#include "star/http/backend.h"
#include "star/http/openai_request.h"

namespace star::http {

struct PromptTokens {
  std::vector<int32_t> context;
  std::vector<int32_t> query;
  int64_t count() const { return static_cast<int64_t>(context.size() + query.size()); }
};

// The tokens, or the error to answer with.
std::optional<ApiError> prompt_tokens(Backend& backend, const ModelFacts& model, const OpenAiRequest& request,
                                      PromptTokens& out);

}  // namespace star::http
