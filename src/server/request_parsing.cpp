#include "star/server/request_parsing.h"

#include <algorithm>
#include <random>

#include "star/attention/plan_builder.h"
#include "star/engine/inference.h"
#include "star/engine/step_engine.h"
#include "star/server/batch_scheduler.h"
#include "star/server/proto_convert.h"

namespace star::server {

namespace {

std::vector<int32_t> to_ids(const google::protobuf::RepeatedField<int32_t>& ids) { return {ids.begin(), ids.end()}; }

// Plans the context as Phase 1 will: catches what the algorithm cannot do with this context on
// these ranks. The message names the request's `attention` only when the request set it; otherwise
// the fault is in the server's own configuration.
Result<BlockPlan> check_plan(std::span<const int32_t> context_ids, const AttentionConfig& attention,
                             const RequestDefaults& defaults, bool request_set_attention) {
  Result<BlockPlan> plan = build_block_plan(context_ids, defaults.ranks, attention, defaults.model.sentence_ends);
  if (plan.ok()) return plan;
  if (request_set_attention) return invalid_argument("attention: " + plan.status().message());
  return invalid_argument("the server's attention configuration (--attention, --config) cannot run this request: " +
                          plan.status().message());
}

std::string text_of(int64_t value) { return std::to_string(value); }

// `what`: "context" for a context, "prompt" for a query that has no separate context (it is then
// the whole prompt, bounded all the same).
Status check_context_tokens(const char* field, size_t tokens, const RequestDefaults& defaults,
                            const char* what = "context") {
  const int64_t limit = defaults.limits.max_context_tokens;
  if (limit <= 0 || static_cast<int64_t>(tokens) <= limit) return ok_status();
  return invalid_argument(std::string(field) + ": " + text_of(static_cast<int64_t>(tokens)) + " " + what +
                          " tokens exceed the server's limit of " + text_of(limit) + " (--max-context-tokens)");
}

Status check_stop_strings(const v1::GenerateRequest& r, const ServerLimits& limits) {
  if (r.stop_size() > limits.max_stop_strings) {
    return invalid_argument("stop: " + text_of(r.stop_size()) + " stop strings exceed the server's limit of " +
                            text_of(limits.max_stop_strings) + " (--max-stop-strings)");
  }
  for (int i = 0; i < r.stop_size(); ++i) {
    const int64_t bytes = static_cast<int64_t>(r.stop(i).size());
    if (bytes == 0) return invalid_argument("stop[" + text_of(i) + "]: empty stop string");
    if (bytes > limits.max_stop_string_bytes) {
      return invalid_argument("stop[" + text_of(i) + "]: " + text_of(bytes) + " bytes exceed the server's limit of " +
                              text_of(limits.max_stop_string_bytes) + " bytes per stop string (--max-stop-string-bytes)");
    }
  }
  return ok_status();
}

Result<AttentionConfig> request_attention(bool has_override, const v1::AttentionConfig& override,
                                          const AttentionConfig& base) {
  if (!has_override) return base;
  return apply_attention_override(base, override);
}

// Compared without forming the sum: a client's max_tokens may be close to INT64_MAX.
Status check_positions(const char* field, int64_t context, int64_t query, int64_t max_tokens, int64_t positions) {
  if (max_tokens <= positions - context - query) return ok_status();
  return invalid_argument(std::string(field) + ": " + std::to_string(context) + " context + " + std::to_string(query) +
                          " query + " + std::to_string(max_tokens) + " max_tokens exceed the model's " +
                          std::to_string(positions) + " positions");
}

// max_tokens once the prompt's size is known. A request's own max_tokens must fit in the window
// (the error names `max_tokens`: lowering it helps). The server's default (--max-tokens) is no
// request field: it shrinks to the room left, and only a prompt that leaves no room at all is
// refused, naming the prompt's field.
Status resolve_max_tokens(const v1::GenerateRequest& r, const RequestDefaults& defaults, const char* prompt_field,
                          int64_t context, int64_t query, GenerationOptions& g) {
  const int64_t positions = defaults.model.llama->config().max_position_embeddings;
  if (r.max_tokens() != 0) return check_positions("max_tokens", context, query, r.max_tokens(), positions);
  const int64_t room = positions - context - query;
  if (room < 1) {
    return invalid_argument(std::string(prompt_field) + ": " + text_of(context) + " context + " + text_of(query) +
                            " query tokens leave no room for an answer in the model's " + text_of(positions) +
                            " positions");
  }
  g.max_tokens = std::min(defaults.max_tokens, room);
  return ok_status();
}

// An unset seed draws a fresh one per request (as the OpenAI shim and vLLM do); the summary reports
// the seed used, so any answer can be replayed.
uint64_t request_seed(const v1::SamplingParams& sampling) {
  if (sampling.has_seed()) return sampling.seed();
  static thread_local std::mt19937_64 fresh(std::random_device{}());
  return fresh();
}

Result<GenerationOptions> generation_options(const v1::GenerateRequest& r, const RequestDefaults& defaults) {
  GenerationOptions g;
  if (r.max_tokens() < 0) {
    return invalid_argument("max_tokens: " + std::to_string(r.max_tokens()) + " (must be >= 0; 0: the server's default)");
  }
  if (r.max_tokens() > defaults.limits.max_tokens) {
    return invalid_argument("max_tokens: " + text_of(r.max_tokens()) + " exceeds the server's limit of " +
                            text_of(defaults.limits.max_tokens) + " (--max-tokens-limit)");
  }
  g.max_tokens = r.max_tokens() == 0 ? defaults.max_tokens : r.max_tokens();
  g.sampling.temperature = r.sampling().temperature();
  g.sampling.top_k = r.sampling().top_k();
  g.sampling.top_p = r.sampling().has_top_p() ? r.sampling().top_p() : 1.f;
  g.sampling.seed = request_seed(r.sampling());
  if (Status s = validate_sampling(g.sampling); !s.ok()) return s;
  if (Status s = check_stop_strings(r, defaults.limits); !s.ok()) return s;
  g.stop_strings.assign(r.stop().begin(), r.stop().end());
  g.stop_token_ids = to_ids(r.stop_token_ids());
  if (Status s = check_token_ids("stop_token_ids", g.stop_token_ids, defaults.model.llama->config().vocab_size);
      !s.ok()) {
    return s;
  }
  g.ignore_eos = r.ignore_eos();
  return g;
}

}  // namespace

std::vector<int64_t> context_rank_bytes(const BlockPlan& plan, int64_t kv_bytes_per_token) {
  std::vector<int64_t> bytes;
  for (const RankPlan& rank : plan.ranks) {
    int64_t tokens = rank.shard.size();
    if (rank.keep_prefix_kv) {
      for (const EncodeStep& step : rank.steps) {
        if (step.kind == EncodeStep::Kind::kExtendPrefix) tokens += static_cast<int64_t>(step.token_ids.size());
      }
    }
    bytes.push_back(tokens * kv_bytes_per_token);
  }
  return bytes;
}

std::vector<int64_t> generate_rank_bytes(const BlockPlan& plan, bool context_kept, int64_t query_tokens,
                                         int64_t max_tokens, int64_t kv_bytes_per_token) {
  std::vector<int64_t> bytes = context_kept ? std::vector<int64_t>(plan.ranks.size(), 0)
                                            : context_rank_bytes(plan, kv_bytes_per_token);
  bytes[static_cast<size_t>(plan.query_host)] += (query_tokens + max_tokens) * kv_bytes_per_token;
  return bytes;
}

OwnTokens own_tokens_of(const BlockPlan& plan, const AttentionConfig& attention, int64_t query_tokens,
                        int64_t max_tokens, int64_t kv_bytes_per_token) {
  return {plan.query_host, (query_tokens + max_tokens) * kv_bytes_per_token, own_tokens_movable(plan, attention)};
}

Status check_token_ids(const char* field, std::span<const int32_t> ids, int64_t vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      return invalid_argument(std::string(field) + "[" + std::to_string(i) + "]: " + std::to_string(ids[i]) +
                              " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
  return ok_status();
}

Result<GenerateWork> parse_generate_request(const v1::GenerateRequest& r, const RequestDefaults& defaults,
                                            const ContextRegistry& contexts) {
  const Tokenizer& tokenizer = *defaults.model.tokenizer;
  const LlamaConfig& config = defaults.model.llama->config();
  GenerateWork work;
  const char* prompt_field = "";
  Result<GenerationOptions> generation = generation_options(r, defaults);
  if (!generation.ok()) return generation.status();
  work.generation = std::move(*generation);

  switch (r.input_case()) {
    case v1::GenerateRequest::kText:
      if (r.text().query().empty()) return invalid_argument("text.query: empty");
      if (!r.text().context().empty()) work.context_ids = tokenizer.encode(r.text().context(), {.add_bos = true});
      if (Status s = check_context_tokens("text.context", work.context_ids.size(), defaults); !s.ok()) return s;
      work.query_ids = tokenizer.encode(r.text().query(), {.add_bos = r.text().context().empty()});
      if (work.context_ids.empty()) {
        if (Status s = check_context_tokens("text.query", work.query_ids.size(), defaults, "prompt"); !s.ok()) {
          return s;
        }
      }
      prompt_field = work.context_ids.empty() ? "text.query" : "text.context";
      break;
    case v1::GenerateRequest::kTokens:
      if (r.tokens().query_ids().empty()) return invalid_argument("tokens.query_ids: empty");
      if (Status s = check_context_tokens("tokens.context_ids", r.tokens().context_ids_size(), defaults); !s.ok()) {
        return s;
      }
      if (r.tokens().context_ids().empty()) {
        if (Status s = check_context_tokens("tokens.query_ids", r.tokens().query_ids_size(), defaults, "prompt");
            !s.ok()) {
          return s;
        }
      }
      work.context_ids = to_ids(r.tokens().context_ids());
      work.query_ids = to_ids(r.tokens().query_ids());
      if (Status s = check_token_ids("tokens.context_ids", work.context_ids, config.vocab_size); !s.ok()) return s;
      if (Status s = check_token_ids("tokens.query_ids", work.query_ids, config.vocab_size); !s.ok()) return s;
      prompt_field = work.context_ids.empty() ? "tokens.query_ids" : "tokens.context_ids";
      break;
    case v1::GenerateRequest::kSession: {
      const v1::SessionInput& session = r.session();
      if (session.context_id().empty()) return invalid_argument("session.context_id: empty");
      if (r.has_attention()) {
        return invalid_argument("attention: not allowed with session (a context keeps the configuration it was made with)");
      }
      if (session.query_case() == v1::SessionInput::kQueryText) {
        if (session.query_text().empty()) return invalid_argument("session.query_text: empty");
        work.query_ids = tokenizer.encode(session.query_text(), {.add_bos = false});
      } else if (session.query_case() == v1::SessionInput::kQueryIds) {
        work.query_ids = to_ids(session.query_ids().ids());
        if (work.query_ids.empty()) return invalid_argument("session.query_ids: empty");
        if (Status s = check_token_ids("session.query_ids", work.query_ids, config.vocab_size); !s.ok()) return s;
      } else {
        return invalid_argument("session: set query_text or query_ids");
      }
      std::optional<ContextEntry> entry = contexts.find(session.context_id());
      if (!entry) return not_found("session.context_id: no context '" + session.context_id() + "'");
      const char* query_field = session.query_case() == v1::SessionInput::kQueryText ? "session.query_text"
                                                                                     : "session.query_ids";
      if (Status s = resolve_max_tokens(r, defaults, query_field, entry->tokens(),
                                        static_cast<int64_t>(work.query_ids.size()), work.generation);
          !s.ok()) {
        return s;
      }
      work.context_id = session.context_id();
      // The context's plan says which rank hosts the query (a kept context needs no new shard).
      Result<BlockPlan> plan = build_block_plan(*entry->context_ids, defaults.ranks, entry->attention,
                                                defaults.model.sentence_ends);
      if (!plan.ok()) return internal_error("context '" + entry->id + "' cannot be planned again: " + plan.status().message());
      work.kv_rank_bytes = generate_rank_bytes(*plan, /*context_kept=*/true, static_cast<int64_t>(work.query_ids.size()),
                                               work.generation.max_tokens, defaults.model.engine->kv_bytes_per_token());
      work.own = own_tokens_of(*plan, entry->attention, static_cast<int64_t>(work.query_ids.size()),
                               work.generation.max_tokens, defaults.model.engine->kv_bytes_per_token());
      if (Status s = check_fits_kv_cache((std::string(query_field) + ", max_tokens").c_str(), work.kv_rank_bytes,
                                         defaults.scheduler);
          !s.ok()) {
        return s;
      }
      return work;
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      return invalid_argument("input: set one of text, tokens or session");
  }

  if (Status s = resolve_max_tokens(r, defaults, prompt_field, static_cast<int64_t>(work.context_ids.size()),
                                    static_cast<int64_t>(work.query_ids.size()), work.generation);
      !s.ok()) {
    return s;
  }
  Result<AttentionConfig> attention = request_attention(r.has_attention(), r.attention(), defaults.attention);
  if (!attention.ok()) return attention.status();
  work.attention = *attention;
  const InferenceRequest request{work.context_ids, work.query_ids, work.attention, work.generation};
  if (Status s = validate_request(config, request); !s.ok()) return s;
  Result<BlockPlan> plan = check_plan(work.context_ids, work.attention, defaults, r.has_attention());
  if (!plan.ok()) return plan.status();
  work.context_blocks = static_cast<int>(plan->blocks.size());
  work.kv_rank_bytes = generate_rank_bytes(*plan, /*context_kept=*/false, static_cast<int64_t>(work.query_ids.size()),
                                           work.generation.max_tokens, defaults.model.engine->kv_bytes_per_token());
  work.own = own_tokens_of(*plan, work.attention, static_cast<int64_t>(work.query_ids.size()),
                           work.generation.max_tokens, defaults.model.engine->kv_bytes_per_token());
  if (Status s = check_fits_kv_cache((std::string(prompt_field) + ", max_tokens").c_str(), work.kv_rank_bytes,
                                     defaults.scheduler);
      !s.ok()) {
    return s;
  }
  return work;
}

Result<CreateContextWork> parse_create_context_request(const v1::CreateContextRequest& r,
                                                       const RequestDefaults& defaults) {
  const LlamaConfig& config = defaults.model.llama->config();
  CreateContextWork work;
  switch (r.input_case()) {
    case v1::CreateContextRequest::kText:
      if (r.text().empty()) return invalid_argument("text: empty");
      work.context_ids = defaults.model.tokenizer->encode(r.text(), {.add_bos = true});
      if (Status s = check_context_tokens("text", work.context_ids.size(), defaults); !s.ok()) return s;
      break;
    case v1::CreateContextRequest::kIds:
      if (r.ids().ids().empty()) return invalid_argument("ids: empty");
      if (Status s = check_context_tokens("ids.ids", r.ids().ids_size(), defaults); !s.ok()) return s;
      work.context_ids = to_ids(r.ids().ids());
      if (Status s = check_token_ids("ids.ids", work.context_ids, config.vocab_size); !s.ok()) return s;
      break;
    case v1::CreateContextRequest::INPUT_NOT_SET:
      return invalid_argument("input: set text or ids");
  }
  // At least one query token and one answer token must still fit.
  const int64_t tokens = static_cast<int64_t>(work.context_ids.size());
  const char* input_field = r.input_case() == v1::CreateContextRequest::kText ? "text" : "ids.ids";
  if (Status s = check_positions(input_field, tokens, 1, 1, config.max_position_embeddings); !s.ok()) return s;
  if (r.reserve_tokens() < 0) {
    return invalid_argument("reserve_tokens: " + std::to_string(r.reserve_tokens()) +
                            " (must be >= 0; 0: the server's default)");
  }
  const int64_t reserve = r.reserve_tokens() == 0 ? defaults.reserve_tokens : r.reserve_tokens();
  work.reserve_tokens = std::min(reserve, config.max_position_embeddings - tokens);
  Result<AttentionConfig> attention = request_attention(r.has_attention(), r.attention(), defaults.attention);
  if (!attention.ok()) return attention.status();
  work.attention = *attention;
  Result<BlockPlan> plan = check_plan(work.context_ids, work.attention, defaults, r.has_attention());
  if (!plan.ok()) return plan.status();
  work.context_blocks = static_cast<int>(plan->blocks.size());
  const std::vector<int64_t> rank_bytes = context_rank_bytes(*plan, defaults.model.engine->kv_bytes_per_token());
  for (size_t rank = 0; rank < rank_bytes.size(); ++rank) {
    if (rank_bytes[rank] > defaults.context_cache_bytes) {
      return resource_exhausted("context: its KV needs " + text_of(rank_bytes[rank]) + " bytes on rank " +
                                text_of(static_cast<int64_t>(rank)) + ", more than the context cache's " +
                                text_of(defaults.context_cache_bytes) + " bytes per rank (--context-cache-bytes)");
    }
  }
  if (Status s = check_fits_kv_cache(input_field, rank_bytes, defaults.scheduler); !s.ok()) return s;
  work.kv_rank_bytes = rank_bytes;
  return work;
}

}  // namespace star::server
