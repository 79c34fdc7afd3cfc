#include "phase_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sys/resource.h>
#include <vector>

#include "star/attention/attention_config_io.h"
#include "star/backend/backend_selection.h"
#include "star/dist/mpi_session.h"
#include "star/engine/inference.h"

namespace star {

CLI::App* add_phase_command(CLI::App& app, PhaseCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("phase", "Phase 1 critical path and Phase 2 decode speed (run under mpirun)");
  cmd->add_option("--model", o.model_path, "HF model directory or .gguf file")->required();
  cmd->add_option("--context", o.context, "context tokens")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--query", o.query, "query tokens")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--decode-tokens", o.decode_tokens, "tokens generated")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--backend", o.backend, "cpu, or cuda (one GPU per rank, by local rank)")
      ->capture_default_str()->check(CLI::IsMember(backend_names()));
  cmd->add_option("--kv-dtype", o.kv_dtype, kKvDTypeHelp);
  add_attention_options(*cmd, o.attention_flags, o.attention_config_file);
  return cmd;
}

int run_phase_command(const CLI::App& command, const PhaseCommandOptions& o) {
  Result<MpiSession> mpi = MpiSession::start(nullptr, nullptr);
  if (!mpi.ok()) {
    std::fprintf(stderr, "star-bench: %s\n", mpi.status().to_string().c_str());
    return 1;
  }
  Communicator& comm = *mpi->world;
  if (Status s = check_backend(o.backend); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 2;
  }
  Result<KvDType> kv_dtype = resolve_kv_dtype(o.backend, o.kv_dtype);
  if (!kv_dtype.ok()) {
    if (comm.rank() == 0) std::fprintf(stderr, "%s\n", kv_dtype.status().to_string().c_str());
    return 2;
  }
  const int64_t context = o.context, query = o.query, decode = o.decode_tokens;
  Result<AttentionConfig> resolved = resolve_attention_options(command, o.attention_flags, o.attention_config_file);
  Result<RuntimeModel> model = open_model(o.model_path, *kv_dtype);
  for (const Status* s : {&resolved.status(), &model.status()}) {
    if (!s->ok()) {
      if (comm.rank() == 0) std::fprintf(stderr, "%s\n", s->to_string().c_str());
      return 2;
    }
  }
  if (Status s = select_backend(*model, o.backend); !s.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), s.to_string().c_str());
    return 2;
  }
  InferenceRequest request;
  request.attention = *resolved;
  std::mt19937 rng(11);
  const int64_t vocab = model->llama->config().vocab_size;
  for (int64_t i = 0; i < context; ++i) request.context_ids.push_back(static_cast<int32_t>(rng() % vocab));
  for (int64_t i = 0; i < query; ++i) request.query_ids.push_back(static_cast<int32_t>(rng() % vocab));
  request.generation.max_tokens = decode;
  request.generation.ignore_eos = true;
  Result<InferenceOutcome> out = run_inference(*model, comm, request);
  if (!out.ok()) {
    if (comm.rank() == 0) std::fprintf(stderr, "%s\n", out.status().to_string().c_str());
    return 3;
  }
  // Peak resident memory of each rank over the whole run (weights, shard, Phase 1 activations).
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  std::vector<double> peaks(comm.size());
  if (Status s = comm.all_gather(&peak_mib, sizeof(double), peaks.data()); !s.ok()) return 3;
  if (comm.rank() == 0) {
    const GenerationResult& g = out->generation;
    const int64_t steps = static_cast<int64_t>(g.tokens.size());
    nlohmann::json j;
    j["algorithm"] = out->algorithm;
    j["backend"] = o.backend;
    j["kv_dtype"] = kv_dtype_name(*kv_dtype);
    j["context"] = context;
    j["ranks"] = comm.size();
    j["block_size"] = request.attention.block_size;
    j["phase1_critical_path_s"] = out->phase1_critical_path_seconds();
    j["phase1_wall_s"] = out->phase1_seconds();
    j["phase1_rank_compute_s"] = out->phase1_rank_compute_seconds;
    j["shard_tokens"] = out->shard_tokens;
    j["peak_rss_mib"] = peaks;
    j["shard_bytes"] = out->shard_bytes;
    j["first_token_s"] = g.first_token_seconds;
    j["decode_ms_per_token"] = steps > 1 ? 1e3 * g.decode_seconds / static_cast<double>(steps - 1) : 0.0;
    // The query step gathered query·Hq·(d+1) floats per layer; each decode step after it 1·Hq·(d+1).
    const LlamaConfig& c = model->llama->config();
    const int64_t query_floats = comm.size() > 1 ? c.n_layers * query * c.n_heads * (c.head_dim + 1) : 0;
    j["bytes_sent_per_decode_step"] = steps > 1 ? 4.0 * static_cast<double>(g.floats_sent - query_floats) / (steps - 1) : 0.0;
    // Host time in the all-gathers and merges; on --backend cuda over NCCL only enqueueing them,
    // as the GPU runs them in the model's stream order and the host waits at the logits instead.
    j["gather_merge_fraction_of_decode"] = g.decode_seconds > 0 ? g.decode_gather_merge_seconds / g.decode_seconds : 0.0;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace star
