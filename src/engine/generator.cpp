#include "star/engine/generator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>

#include "star/engine/stop_strings.h"
#include "star/tokenizer/streaming_decoder.h"

namespace star {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Rank 0's view of the growing answer: text, stop strings and stop ids.
class AnswerTracker {
 public:
  AnswerTracker(const Tokenizer& tokenizer, const LlamaConfig& config, const GenerationOptions& options,
                const TokenSink& sink)
      : decoder_(tokenizer, /*skip_special=*/true, /*continues_text=*/true), stops_(options.stop_strings), stop_ids_(options.stop_token_ids), options_(options),
        sink_(sink) {
    if (!options.ignore_eos) stop_ids_.insert(stop_ids_.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  }

  // Records token t; returns the reason to stop now, if any.
  std::optional<FinishReason> add(int32_t t, int64_t generated_before) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), t) != stop_ids_.end()) {
      emit(t, stops_.flush() + decoder_.flush());
      return FinishReason::kStop;
    }
    tokens.push_back(t);
    std::string piece = stops_.push(decoder_.push(t));
    if (stops_.stopped()) {
      emit(t, piece);
      return FinishReason::kStop;
    }
    if (generated_before + 1 >= options_.max_tokens) {
      emit(t, piece + stops_.push(decoder_.flush()) + stops_.flush());
      return stops_.stopped() ? FinishReason::kStop : FinishReason::kLength;
    }
    if (!emit(t, piece)) return FinishReason::kCancelled;
    return std::nullopt;
  }

  std::vector<int32_t> tokens;
  std::string text;

 private:
  bool emit(int32_t t, const std::string& piece) {
    text += piece;
    return sink_ ? sink_(t, piece) : true;
  }
  StreamingDecoder decoder_;
  StopStringMatcher stops_;
  std::vector<int32_t> stop_ids_;
  const GenerationOptions& options_;
  const TokenSink& sink_;
};

}  // namespace

Result<GenerationResult> generate(EngineModel& model, const Tokenizer& tokenizer, const ShardLayout& layout,
                                  Communicator& comm, KvShard& shard, std::span<const int32_t> query_ids,
                                  const GenerationOptions& options, const TokenSink& sink) {
  if (query_ids.empty()) return invalid_argument("query: empty (at least one token is needed)");
  if (options.max_tokens < 1) {
    return invalid_argument("max_tokens: " + std::to_string(options.max_tokens) + " (must be >= 1)");
  }
  const bool is_root = comm.rank() == 0;
  const auto start = Clock::now();
  GenerationResult result;
  Result<std::unique_ptr<EngineAttention>> sharded =
      model.sharded_query(comm, shard, comm.rank() == layout.query_host, layout.window);
  if (!sharded.ok()) return sharded.status();
  EngineAttention& attention = **sharded;
  attention.set_skip_softmax(layout.skip_softmax.prefill_scale_factor);
  Sampler sampler(options.sampling);
  AnswerTracker answer(tokenizer, model.config(), options, sink);

  std::vector<int32_t> tokens(query_ids.begin(), query_ids.end());
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(layout.query_position_start));
  int64_t next_position = layout.query_position_start + static_cast<int64_t>(tokens.size());
  const int64_t query_rows = options.return_query_logits ? static_cast<int64_t>(tokens.size()) : 1;

  double query_gather_merge = 0;
  for (int64_t step = 0;; ++step) {
    // Only rank 0 samples, so only it pays for the vocabulary projection.
    const int64_t rows = is_root ? (step == 0 ? query_rows : 1) : 0;
    Result<std::vector<float>> logits = model.forward(tokens, positions, attention, rows);
    if (!logits.ok()) return logits.status();
    // decision[0]: the token, decision[1]: 0 to continue or 1 + FinishReason.
    std::array<int32_t, 2> decision{0, 0};
    if (is_root) {
      const int64_t vocab = model.config().vocab_size;
      if (step == 0 && options.return_query_logits) result.query_logits = *logits;
      std::span<const float> last(logits->data() + (rows - 1) * vocab, vocab);
      decision[0] = sampler.sample(last);
      if (auto reason = answer.add(decision[0], step)) decision[1] = 1 + static_cast<int32_t>(*reason);
    }
    if (Status s = comm.broadcast(decision.data(), sizeof(decision), 0); !s.ok()) return s;
    if (step == 0) {
      result.first_token_seconds = seconds_since(start);
      query_gather_merge = attention.gather_merge_seconds();
      attention.set_skip_softmax(layout.skip_softmax.decode_scale_factor);
    }
    if (decision[1] != 0) {
      result.finish_reason = static_cast<FinishReason>(decision[1] - 1);
      break;
    }
    tokens.assign(1, decision[0]);
    positions.assign(1, static_cast<int32_t>(next_position++));
  }
  if (is_root) {
    result.tokens = std::move(answer.tokens);
    result.text = std::move(answer.text);
  }
  result.decode_seconds = seconds_since(start) - result.first_token_seconds;
  result.floats_sent = attention.floats_sent();
  result.decode_gather_merge_seconds = attention.gather_merge_seconds() - query_gather_merge;
  result.skip_softmax_tiles = attention.skip_softmax_tiles();
  return result;
}

}  // namespace star
