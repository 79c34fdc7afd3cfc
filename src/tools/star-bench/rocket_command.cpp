#include "rocket_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "star/attention/attention_config_io.h"
#include "star/attention/plan_builder.h"
#include "star/dist/mpi_session.h"
#include "star/engine/inference.h"
#include "star/engine/rocket_compaction.h"

namespace star {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One budget's measurements over the rounds (rank 0's view).
struct BudgetRuns {
  int64_t budget = 0;  // 0: no sparsity
  std::vector<double> ms_per_token, stage1_seconds;
  std::vector<size_t> shard_bytes;  // per rank
  std::vector<int64_t> shard_tokens;
};

}  // namespace

CLI::App* add_rocket_command(CLI::App& app, RocketCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("rocket", "RocketKV decode speed and KV bytes per rank by budget (under mpirun)");
  cmd->add_option("--model", o.model_path, "HF model directory or .gguf file")->required();
  cmd->add_option("--context", o.context, "context tokens")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--query", o.query, "query tokens")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--decode-tokens", o.decode_tokens, "tokens generated")
      ->capture_default_str()->check(CLI::Range(2, 1 << 16));
  cmd->add_option("--rounds", o.rounds, "rounds over all budgets (the median is reported)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--budgets", o.budgets, "prompt_budget values (comma-separated)")
      ->capture_default_str()->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--window-size", o.rocket.window_size, "RocketKV window_size")->capture_default_str();
  cmd->add_option("--kernel-size", o.rocket.kernel_size, "RocketKV kernel_size")->capture_default_str();
  cmd->add_option("--topk", o.rocket.topk, "RocketKV topk (pages)")->capture_default_str();
  cmd->add_option("--topr", o.rocket.topr, "RocketKV topr (channels)")->capture_default_str();
  cmd->add_option("--page-size", o.rocket.page_size, "RocketKV page_size")->capture_default_str();
  cmd->add_option("--kv-dtype", o.kv_dtype, kKvDTypeHelp);
  add_attention_options(*cmd, o.attention_flags, o.attention_config_file);
  return cmd;
}

int run_rocket_command(const CLI::App& command, const RocketCommandOptions& o) {
  Result<MpiSession> mpi = MpiSession::start(nullptr, nullptr);
  if (!mpi.ok()) {
    std::fprintf(stderr, "star-bench: %s\n", mpi.status().to_string().c_str());
    return 1;
  }
  Communicator& comm = *mpi->world;
  const auto fail = [&](const Status& s, int code) {
    if (comm.rank() == 0) std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return code;
  };
  Result<KvDType> kv_dtype = resolve_kv_dtype("cpu", o.kv_dtype);
  if (!kv_dtype.ok()) return fail(kv_dtype.status(), 2);
  Result<AttentionConfig> attention = resolve_attention_options(command, o.attention_flags, o.attention_config_file);
  if (!attention.ok()) return fail(attention.status(), 2);
  Result<RuntimeModel> model = open_model(o.model_path, *kv_dtype);
  if (!model.ok()) return fail(model.status(), 2);
  EngineModel& engine = *model->engine;

  std::mt19937 rng(11);
  const int64_t vocab = model->llama->config().vocab_size;
  std::vector<int32_t> context_ids, query_ids;
  for (int64_t i = 0; i < o.context; ++i) context_ids.push_back(static_cast<int32_t>(rng() % vocab));
  for (int64_t i = 0; i < o.query; ++i) query_ids.push_back(static_cast<int32_t>(rng() % vocab));
  Result<BlockPlan> plan = build_block_plan(context_ids, comm.size(), *attention, model->sentence_ends);
  if (!plan.ok()) return fail(plan.status(), 2);
  if (Status s = engine.supports_rocket(); !s.ok()) return fail(s, 2);
  if (Status s = check_rocket_plan(*plan, o.rocket); !s.ok()) return fail(s, 2);

  EncodedContext full;
  full.layout = ShardLayout::of(*plan);
  full.algorithm = plan->algorithm;
  full.context_tokens = o.context;
  const int64_t shard_tokens = plan->ranks[comm.rank()].shard.size();
  Result<std::unique_ptr<KvShard>> shard = engine.new_shard(shard_tokens + o.query + o.decode_tokens);
  if (!shard.ok()) return fail(shard.status(), 3);
  full.shard = std::move(*shard);
  rocket::WindowQueries window;
  Result<Phase1Stats> phase1 =
      encode_context(engine, *plan, comm, *full.shard, {}, 0.0, WindowRecording{o.rocket.window_size, &window});
  if (!phase1.ok()) return fail(phase1.status(), 3);

  GenerationOptions generation;
  generation.max_tokens = o.decode_tokens;
  generation.ignore_eos = true;
  std::vector<BudgetRuns> runs(1 + o.budgets.size());
  for (size_t b = 0; b < o.budgets.size(); ++b) runs[1 + b].budget = o.budgets[b];
  for (int64_t round = 0; round < o.rounds; ++round) {
    for (BudgetRuns& run : runs) {
      EncodedContext compacted;
      EncodedContext* context = &full;
      double stage1 = 0;
      if (run.budget > 0) {
        compacted.layout = full.layout;
        Result<std::unique_ptr<KvShard>> copy = engine.new_shard(shard_tokens);
        if (!copy.ok()) return fail(copy.status(), 3);
        if (Status s = engine.append(*full.shard, **copy); !s.ok()) return fail(s, 3);
        RocketConfig config = o.rocket;
        config.prompt_budget = run.budget;
        const auto start = std::chrono::steady_clock::now();
        Result<std::unique_ptr<KvShard>> kept = compact_for_rocket(engine, comm, *plan, config, window, **copy);
        if (!kept.ok()) return fail(kept.status(), 3);
        stage1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        compacted.shard = std::move(*kept);
        context = &compacted;
      }
      const size_t bytes = context->shard->bytes();
      const int64_t tokens = context->shard->tokens();
      Result<GenerationResult> g = answer_query(*model, comm, *context, query_ids, generation);
      if (!g.ok()) return fail(g.status(), 3);
      run.shard_bytes.assign(comm.size(), 0);
      run.shard_tokens.assign(comm.size(), 0);
      if (Status s = comm.all_gather(&bytes, sizeof bytes, run.shard_bytes.data()); !s.ok()) return fail(s, 3);
      if (Status s = comm.all_gather(&tokens, sizeof tokens, run.shard_tokens.data()); !s.ok()) return fail(s, 3);
      const auto steps = static_cast<double>(g->tokens.size());
      run.ms_per_token.push_back(1e3 * g->decode_seconds / (steps - 1));
      run.stage1_seconds.push_back(stage1);
    }
  }
  if (comm.rank() == 0) {
    const double none_ms = median(runs[0].ms_per_token);
    for (const BudgetRuns& run : runs) {
      nlohmann::json j;
      j["algorithm"] = plan->algorithm;
      j["ranks"] = comm.size();
      j["context"] = o.context;
      j["kv_dtype"] = kv_dtype_name(*kv_dtype);
      j["budget"] = run.budget > 0 ? nlohmann::json(run.budget) : nlohmann::json("none");
      j["topk"] = o.rocket.topk;
      j["page_size"] = o.rocket.page_size;
      j["shard_bytes"] = run.shard_bytes;
      j["shard_tokens"] = run.shard_tokens;
      j["decode_ms_per_token"] = median(run.ms_per_token);
      j["decode_ms_per_token_rounds"] = run.ms_per_token;
      j["decode_speedup"] = none_ms / median(run.ms_per_token);
      j["stage1_s"] = median(run.stage1_seconds);
      std::printf("%s\n", j.dump().c_str());
    }
  }
  return 0;
}

}  // namespace star
