// star-run: offline generation under mpirun. One request (--prompt, or --context-file + --query) or a
// JSONL batch (--input/--output). Rank 0 reads and tokenizes the inputs and sends each request to
// every rank; every rank loads the model and holds one KV shard.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "star/attention/attention_config_io.h"
#include "star/backend/backend_selection.h"
#include "star/common/logging.h"
#include "star/common/thread_environment.h"
#include "star/dist/broadcast_string.h"
#include "star/dist/mpi_session.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"

namespace {

using nlohmann::json;
using namespace star;

struct Options {
  std::string model;
  std::string prompt, context_file, query, input, output;
  std::string log_level = "info";
  std::string backend = "cpu";
  std::string kv_dtype_flag;  // empty: the backend's own
  KvDType kv_dtype = KvDType::kF32;
  std::string attention_config_file;
  AttentionConfig attention;
  GenerationOptions generation;
};

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Rank 0: one request's token ids. BOS opens the context (or the query when there is no context).
json tokenize_request(const Tokenizer& tok, const std::string& context, const std::string& query) {
  EncodeOptions with_bos{.add_bos = true};
  json r;
  r["context_ids"] = context.empty() ? std::vector<int32_t>{} : tok.encode(context, with_bos);
  r["query_ids"] = tok.encode(query, EncodeOptions{.add_bos = context.empty()});
  return r;
}

// Rank 0: every request to run, as {"context_ids", "query_ids", "line"} objects.
Result<std::vector<json>> read_requests(const Options& o, const Tokenizer& tok) {
  std::vector<json> out;
  if (!o.input.empty()) {
    std::ifstream in(o.input);
    if (!in) return not_found("--input: cannot read '" + o.input + "'");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("input_query") || !j["input_query"].is_string() ||
          (j.contains("input_context") && !j["input_context"].is_string())) {
        return invalid_argument(o.input + ":" + std::to_string(n) +
                                ": expected a JSON object with string fields input_context and input_query");
      }
      json r = tokenize_request(tok, j.value("input_context", ""), j["input_query"].get<std::string>());
      r["line"] = j;
      out.push_back(std::move(r));
    }
    return out;
  }
  if (!o.prompt.empty()) {
    out.push_back(tokenize_request(tok, "", o.prompt));
    return out;
  }
  Result<std::string> context = read_file(o.context_file);
  if (!context.ok()) return invalid_argument("--context-file: " + context.status().message());
  out.push_back(tokenize_request(tok, *context, o.query));
  return out;
}

json outcome_json(const InferenceOutcome& o) {
  json j;
  j["pred"] = o.generation.text;
  j["finish_reason"] = finish_reason_name(o.generation.finish_reason);
  j["context_tokens"] = o.context_tokens;
  j["query_tokens"] = o.query_tokens;
  j["output_tokens"] = o.generation.tokens.size();
  j["phase1_seconds"] = o.phase1_seconds();
  j["phase2_seconds"] = o.generation.first_token_seconds + o.generation.decode_seconds;
  j["first_token_seconds"] = o.generation.first_token_seconds;
  // Skip Softmax's attention tiles, summed over ranks (zero when it is off).
  const auto tiles = [](const SkipSoftmaxTiles& t) { return json{{"visited", t.visited}, {"skipped", t.skipped}}; };
  j["skip_softmax_tiles"] = {{"phase1", tiles(o.phase1_skip_softmax_tiles)},
                             {"phase2", tiles(o.generation.skip_softmax_tiles)}};
  return j;
}

void log_outcome(const InferenceOutcome& o) {
  for (size_t r = 0; r < o.shard_tokens.size(); ++r) {
    spdlog::info("rank {} holds {} context tokens, KV {} bytes, Phase 1 {:.3f} s ({:.3f} s compute)", r,
                 o.shard_tokens[r], o.shard_bytes[r], o.phase1_rank_wall_seconds[r], o.phase1_rank_compute_seconds[r]);
  }
  const auto& g = o.generation;
  const double per_token = g.tokens.size() > 1 ? g.decode_seconds / (g.tokens.size() - 1) : 0.0;
  spdlog::info("{}: {} context + {} query tokens, {} generated ({}); Phase 1 critical path {:.3f} s, "
               "first token {:.3f} s, decode {:.2f} ms/token",
               o.algorithm, o.context_tokens, o.query_tokens, g.tokens.size(), finish_reason_name(g.finish_reason),
               o.phase1_seconds(), g.first_token_seconds, per_token * 1e3);
}

// Every rank's verdict on a step, so that all go on or all stop together.
bool all_ranks_ok(Communicator& comm, const Status& mine) {
  if (!mine.ok()) spdlog::error("{}", mine.to_string());
  std::vector<uint8_t> all(comm.size());
  const uint8_t ok = mine.ok() ? 1 : 0;
  if (Status s = comm.all_gather(&ok, 1, all.data()); !s.ok()) return false;
  return std::all_of(all.begin(), all.end(), [](uint8_t v) { return v == 1; });
}

int run(const Options& o, Communicator& comm) {
  Result<RuntimeModel> model = open_model(o.model, o.kv_dtype);
  if (!all_ranks_ok(comm, model.status())) return 1;
  if (!all_ranks_ok(comm, select_backend(*model, o.backend))) return 1;
  const bool root = comm.rank() == 0;
  std::vector<json> requests;
  std::string batch;
  if (root) {
    Result<std::vector<json>> r = read_requests(o, *model->tokenizer);
    json msg = r.ok() ? json{{"requests", *r}} : json{{"error", r.status().to_string()}};
    batch = msg.dump();
  }
  if (Status s = broadcast_string(comm, batch, 0); !s.ok()) {
    spdlog::error("{}", s.to_string());
    return 1;
  }
  json msg = json::parse(batch);
  if (msg.contains("error")) {
    if (root) spdlog::error("{}", msg["error"].get<std::string>());
    return 2;
  }
  std::ofstream out_file;
  if (root && !o.output.empty()) {
    out_file.open(o.output);
    if (!out_file) {
      spdlog::error("--output: cannot write '{}'", o.output);
    }
  }
  int failures = 0;
  const bool stream_stdout = root && o.output.empty();
  for (const json& r : msg["requests"]) {
    InferenceRequest request;
    request.context_ids = r["context_ids"].get<std::vector<int32_t>>();
    request.query_ids = r["query_ids"].get<std::vector<int32_t>>();
    request.attention = o.attention;
    request.generation = o.generation;
    BlockProgress progress = [](int block, int done, int total) {
      spdlog::info("encoded block {} ({}/{} on this rank)", block, done, total);
    };
    TokenSink sink = [&](int32_t, std::string_view text) {
      if (stream_stdout) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      }
      return true;
    };
    Result<InferenceOutcome> outcome = run_inference(*model, comm, request, progress, sink);
    if (stream_stdout) std::fputc('\n', stdout);
    if (!outcome.ok()) {
      ++failures;
      if (root) spdlog::error("{}", outcome.status().to_string());
      if (root && out_file) {
        json line = r.value("line", json::object());
        line["error"] = outcome.status().to_string();
        out_file << line.dump() << "\n";
      }
      continue;
    }
    if (root) {
      log_outcome(*outcome);
      if (out_file) {
        json line = r.value("line", json::object());
        line.update(outcome_json(*outcome));
        out_file << line.dump() << "\n";
      }
    }
  }
  return failures == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  star::ensure_thread_environment(argv);
  star::Result<star::MpiSession> mpi = star::MpiSession::start(&argc, &argv);
  if (!mpi.ok()) {
    std::fprintf(stderr, "star-run: %s\n", mpi.status().to_string().c_str());
    return 1;
  }
  star::Communicator& comm = *mpi->world;
  CLI::App app{"star-run: offline generation with Star Attention across MPI ranks"};
  Options o;
  app.add_option("--model", o.model, "HF model directory or .gguf file")->required();
  auto* prompt = app.add_option("--prompt", o.prompt, "a plain prompt (no context: runs dense)");
  auto* context = app.add_option("--context-file", o.context_file, "file with the long context");
  auto* query = app.add_option("--query", o.query, "the question asked after the context");
  auto* input = app.add_option("--input", o.input, "JSONL batch: input_context, input_query, optional outputs");
  app.add_option("--output", o.output, "JSONL results: the input line plus pred, token counts, timings");
  app.add_option("--max-tokens", o.generation.max_tokens, "tokens to generate at most")->capture_default_str();
  app.add_option("--temperature", o.generation.sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", o.generation.sampling.top_k, "0 = all")->capture_default_str();
  app.add_option("--top-p", o.generation.sampling.top_p, "nucleus mass")->capture_default_str();
  app.add_option("--seed", o.generation.sampling.seed, "sampling seed")->capture_default_str();
  app.add_option("--stop", o.generation.stop_strings, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o.generation.ignore_eos, "keep generating past end-of-text tokens");
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")->capture_default_str();
  app.add_option("--backend", o.backend, "cpu, or cuda (one GPU per rank, by local rank)")
      ->capture_default_str()->check(CLI::IsMember(star::backend_names()));
  app.add_option("--kv-dtype", o.kv_dtype_flag, star::kKvDTypeHelp);
  star::add_attention_options(app, o.attention, o.attention_config_file);
  context->needs(query);
  query->needs(context);
  prompt->excludes(context)->excludes(input);
  input->excludes(context);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm.rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
  }
  star::init_logging(comm.rank(), o.log_level);
  if (o.prompt.empty() && o.context_file.empty() && o.input.empty()) {
    if (comm.rank() == 0) spdlog::error("give --prompt, --context-file with --query, or --input");
    return 2;
  }
  if (star::Status s = star::check_backend(o.backend); !s.ok()) {
    spdlog::error("{}", s.to_string());
    return 2;
  }
  star::Result<star::KvDType> kv_dtype = star::resolve_kv_dtype(o.backend, o.kv_dtype_flag);
  if (!kv_dtype.ok()) {
    if (comm.rank() == 0) spdlog::error("{}", kv_dtype.status().to_string());
    return 2;
  }
  o.kv_dtype = *kv_dtype;
  star::Result<star::AttentionConfig> attention = star::resolve_attention_options(app, o.attention, o.attention_config_file);
  if (!attention.ok()) {
    if (comm.rank() == 0) spdlog::error("{}", attention.status().to_string());
    return 2;
  }
  o.attention = *attention;
  return run(o, comm);
}
