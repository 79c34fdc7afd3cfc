#include "star/http/openai_request.h"

#include <google/protobuf/util/json_util.h>

#include "star/attention/sparse_attention_config_io.h"

namespace star::http {

namespace {

using json = nlohmann::json;

Status field_error(const std::string& field, const std::string& why) { return invalid_argument(field + ": " + why); }

// The field when present and not null.
const json* find(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

Status read_bool(const json& body, const char* key, bool& out) {
  const json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_boolean()) return field_error(key, "must be true or false");
  out = v->get<bool>();
  return ok_status();
}

Status read_number(const json& body, const char* key, double low, double high, double& out) {
  const json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_number()) return field_error(key, "must be a number");
  const double x = v->get<double>();
  if (!(x >= low && x <= high)) {
    return field_error(key, std::to_string(x) + " is outside [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  out = x;
  return ok_status();
}

Result<std::optional<int64_t>> read_integer(const json& body, const char* key, int64_t low) {
  const json* v = find(body, key);
  if (v == nullptr) return std::optional<int64_t>();
  if (!v->is_number_integer()) return field_error(key, "must be an integer");
  const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX ? INT64_MAX : v->get<int64_t>();
  if (x < low) return field_error(key, std::to_string(x) + " must be >= " + std::to_string(low));
  return std::optional<int64_t>(x);
}

Status read_string(const json& body, const char* key, std::string& out) {
  const json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_string()) return field_error(key, "must be a string");
  out = v->get<std::string>();
  return ok_status();
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
Result<std::string> message_content(const json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_error(field, "must be a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string part_field = field + "[" + std::to_string(i) + "]";
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      return field_error(part_field, "only {\"type\": \"text\", \"text\": \"...\"} parts are supported");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

Status read_messages(const json& body, std::vector<ChatMessage>& out) {
  const json* v = find(body, "messages");
  if (v == nullptr) return field_error("messages", "required");
  if (!v->is_array() || v->empty()) return field_error("messages", "must be a non-empty array");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return field_error(field, "must be an object with role and content");
    if (!m.contains("role") || !m["role"].is_string()) return field_error(field + ".role", "required string");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // the newer name of the system role
    if (role != "system" && role != "user" && role != "assistant") {
      return field_error(field + ".role", "'" + role + "' is not one of system, user, assistant");
    }
    if (!m.contains("content") || m["content"].is_null()) return field_error(field + ".content", "required");
    Result<std::string> content = message_content(m["content"], field + ".content");
    if (!content.ok()) return content.status();
    out.push_back({std::move(role), std::move(*content)});
  }
  return ok_status();
}

// A prompt is text or token ids: "text", ["text"], [1, 2, 3] or [[1, 2, 3]]. Several prompts in
// one request (OpenAI's batch form) would need n > 1 choices, which the shim does not make.
Status read_prompt(const json& body, OpenAiRequest& r) {
  const json* v = find(body, "prompt");
  if (v == nullptr) return field_error("prompt", "required");
  const json* one = v;
  if (v->is_array() && v->size() == 1 && ((*v)[0].is_string() || (*v)[0].is_array())) one = &(*v)[0];
  if (one->is_string()) {
    r.prompt = one->get<std::string>();
    if (r.prompt.empty()) return field_error("prompt", "empty");
    return ok_status();
  }
  if (!one->is_array() || (one != v && one->empty())) {
    return field_error("prompt", "must be a string, token ids, or an array of one of them (one prompt per request)");
  }
  std::vector<int32_t> ids;
  for (const json& id : *one) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return field_error("prompt", "must be a string, token ids (integers >= 0), or an array of one of them");
    }
    ids.push_back(id.get<int32_t>());
  }
  if (ids.empty()) return field_error("prompt", "empty");
  r.prompt_ids = std::move(ids);
  return ok_status();
}

Status read_stop(const json& body, std::vector<std::string>& out) {
  const json* v = find(body, "stop");
  if (v == nullptr) return ok_status();
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const json& s : *v) {
      if (!s.is_string()) return field_error("stop", "must be a string or an array of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    return field_error("stop", "must be a string or an array of strings");
  }
  for (const std::string& s : out) {
    if (s.empty()) return field_error("stop", "empty stop string");
  }
  return ok_status();
}

Status read_token_ids(const json& body, const char* key, std::vector<int32_t>& out) {
  const json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_array()) return field_error(key, "must be an array of token ids");
  for (const json& id : *v) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return field_error(key, "must be an array of token ids (integers >= 0)");
    }
    out.push_back(id.get<int32_t>());
  }
  return ok_status();
}

Status read_star(const json& body, Endpoint endpoint, StarExtension& out) {
  const json* v = find(body, "star");
  if (v == nullptr) return ok_status();
  if (!v->is_object()) return field_error("star", "must be an object with context_id, context, attention");
  for (const auto& [key, value] : v->items()) {
    if (key != "context_id" && key != "context" && key != "attention") {
      return field_error("star." + key, "unknown field (star takes context_id, context, attention)");
    }
  }
  if (Status s = read_string(*v, "context_id", out.context_id); !s.ok()) return invalid_argument("star." + s.message());
  if (Status s = read_string(*v, "context", out.context); !s.ok()) return invalid_argument("star." + s.message());
  if (!out.context.empty() && endpoint == Endpoint::kChat) {
    return field_error("star.context", "chat requests take their context from the messages before the last user message");
  }
  if (!out.context.empty() && !out.context_id.empty()) return field_error("star.context", "not with star.context_id");
  if (const json* a = find(*v, "attention")) {
    if (!out.context_id.empty()) {
      return field_error("star.attention", "not with star.context_id (a context keeps the configuration it was made with)");
    }
    v1::AttentionConfig attention;
    google::protobuf::util::JsonParseOptions options;
    const auto parsed = google::protobuf::util::JsonStringToMessage(a->dump(), &attention, options);
    if (!parsed.ok()) return field_error("star.attention", std::string(parsed.message()));
    // Checked here so the error names the shim's field; the server checks again.
    if (const json* sparse = find(*a, "sparse_attention")) {
      if (Result<SparseAttentionConfig> c = sparse_attention_config_from_json(*sparse); !c.ok()) {
        return invalid_argument("star.attention." + c.status().message());
      }
    }
    out.attention = attention;
  }
  return ok_status();
}

// True when `key` is absent, null, or one of `neutral`: a value that asks for nothing the engine
// would have to do.
bool neutral(const json& body, const char* key, std::initializer_list<json> values) {
  const json* v = find(body, key);
  if (v == nullptr) return true;
  for (const json& value : values) {
    if (*v == value) return true;
  }
  return false;
}

// Fields the engine cannot honour are refused by name unless they ask for nothing: the engine has
// no logits processor (penalties, biases, grammars), one choice per request and no tool calls.
Status reject_unsupported(const json& body) {
  if (!neutral(body, "n", {1})) return field_error("n", "only n = 1 is supported");
  if (!neutral(body, "best_of", {1})) return field_error("best_of", "only best_of = 1 is supported");
  if (!neutral(body, "logprobs", {false})) return field_error("logprobs", "not supported");
  if (!neutral(body, "top_logprobs", {0})) return field_error("top_logprobs", "not supported");
  if (!neutral(body, "echo", {false})) return field_error("echo", "not supported");
  if (!neutral(body, "suffix", {""})) return field_error("suffix", "not supported (no fill-in-the-middle)");
  if (!neutral(body, "presence_penalty", {0})) return field_error("presence_penalty", "only 0 is supported");
  if (!neutral(body, "frequency_penalty", {0})) return field_error("frequency_penalty", "only 0 is supported");
  if (!neutral(body, "repetition_penalty", {1})) return field_error("repetition_penalty", "only 1 is supported");
  if (!neutral(body, "logit_bias", {json::object()})) return field_error("logit_bias", "not supported");
  if (!neutral(body, "response_format", {json{{"type", "text"}}})) {
    return field_error("response_format", "only {\"type\": \"text\"} is supported (no structured output)");
  }
  if (!neutral(body, "tools", {json::array()})) return field_error("tools", "not supported");
  if (!neutral(body, "tool_choice", {"none", "auto"})) return field_error("tool_choice", "only \"none\" is supported");
  if (!neutral(body, "functions", {json::array()})) return field_error("functions", "not supported");
  if (!neutral(body, "function_call", {"none", "auto"})) return field_error("function_call", "not supported");
  return ok_status();
}

Status read_sampling(const json& body, OpenAiRequest& r) {
  if (Status s = read_number(body, "temperature", 0, 2, r.temperature); !s.ok()) return s;
  if (Status s = read_number(body, "top_p", 0, 1, r.top_p); !s.ok()) return s;
  if (r.top_p == 0) return field_error("top_p", "must be > 0");
  Result<std::optional<int64_t>> top_k = read_integer(body, "top_k", -1);
  if (!top_k.ok()) return top_k.status();
  if (top_k->has_value()) r.top_k = static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(**top_k, INT32_MAX)));
  if (const json* seed = find(body, "seed")) {
    if (!seed->is_number_integer()) return field_error("seed", "must be an integer");
    r.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  Result<std::optional<int64_t>> min_tokens = read_integer(body, "min_tokens", 0);
  if (!min_tokens.ok()) return min_tokens.status();
  if (min_tokens->value_or(0) > 0) return field_error("min_tokens", "only 0 is supported (the engine has no minimum length)");
  if (Status s = read_stop(body, r.stop); !s.ok()) return s;
  if (Status s = read_token_ids(body, "stop_token_ids", r.stop_token_ids); !s.ok()) return s;
  return read_bool(body, "ignore_eos", r.ignore_eos);
}

}  // namespace

Result<OpenAiRequest> parse_openai_request(Endpoint endpoint, const json& body) {
  if (!body.is_object()) return invalid_argument("body: must be a JSON object");
  OpenAiRequest r;
  r.endpoint = endpoint;
  if (!find(body, "model")) return field_error("model", "required");
  if (Status s = read_string(body, "model", r.model); !s.ok()) return s;
  if (endpoint == Endpoint::kChat) {
    if (Status s = read_messages(body, r.messages); !s.ok()) return s;
    if (Status s = read_bool(body, "add_generation_prompt", r.add_generation_prompt); !s.ok()) return s;
  } else {
    if (Status s = read_prompt(body, r); !s.ok()) return s;
  }
  if (Status s = reject_unsupported(body); !s.ok()) return s;
  if (Status s = read_bool(body, "stream", r.stream); !s.ok()) return s;
  if (const json* options = find(body, "stream_options")) {
    if (!r.stream) return field_error("stream_options", "only allowed when stream is true");
    if (!options->is_object()) return field_error("stream_options", "must be an object");
    if (Status s = read_bool(*options, "include_usage", r.include_usage); !s.ok()) {
      return field_error("stream_options", s.message());
    }
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    const json* v = find(body, key);
    if (v == nullptr) continue;
    if (!v->is_number_integer()) return field_error(key, "must be an integer");
    // Unsigned so that 2^63 and above are reported as sent, not wrapped to a negative count.
    const bool positive = v->is_number_unsigned() ? v->get<uint64_t>() >= 1 : v->get<int64_t>() >= 1;
    if (!positive) return field_error(key, v->dump() + " must be >= 1");
    r.max_tokens = v->get<uint64_t>();  // max_completion_tokens, read last, wins
    r.max_tokens_field = key;
  }
  if (Status s = read_sampling(body, r); !s.ok()) return s;
  if (Status s = read_star(body, endpoint, r.star); !s.ok()) return s;
  return r;
}

v1::GenerateRequest to_generate_request(const OpenAiRequest& r, std::vector<int32_t> context_ids,
                                        std::vector<int32_t> query_ids, uint64_t seed) {
  v1::GenerateRequest g;
  if (!r.star.context_id.empty()) {
    g.mutable_session()->set_context_id(r.star.context_id);
    g.mutable_session()->mutable_query_ids()->mutable_ids()->Add(query_ids.begin(), query_ids.end());
  } else {
    g.mutable_tokens()->mutable_context_ids()->Add(context_ids.begin(), context_ids.end());
    g.mutable_tokens()->mutable_query_ids()->Add(query_ids.begin(), query_ids.end());
    if (r.star.attention) *g.mutable_attention() = *r.star.attention;
  }
  v1::SamplingParams& s = *g.mutable_sampling();
  s.set_temperature(static_cast<float>(r.temperature));
  s.set_top_k(r.top_k);
  if (r.top_p < 1.0) s.set_top_p(static_cast<float>(r.top_p));
  s.set_seed(r.seed.value_or(seed));
  g.set_max_tokens(static_cast<int64_t>(std::min<uint64_t>(r.max_tokens.value_or(0), INT64_MAX)));
  for (const std::string& stop : r.stop) g.add_stop(stop);
  g.mutable_stop_token_ids()->Add(r.stop_token_ids.begin(), r.stop_token_ids.end());
  g.set_ignore_eos(r.ignore_eos);
  return g;
}

}  // namespace star::http

namespace star::http {

ClientFields client_fields(const OpenAiRequest& r) {
  ClientFields f;
  if (r.endpoint == Endpoint::kChat) {
    f.context = "messages";
    f.query = "messages";
  } else {
    f.context = "star.context";
    f.query = "prompt";
  }
  if (r.star.attention) f.attention = "star.attention";
  return f;
}

}  // namespace star::http
