#include "skip_softmax_run_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "star/attention/attention_config_io.h"
#include "star/attention/plan_builder.h"
#include "star/backend/cpu/attention_kernel_clock.h"
#include "star/dist/mpi_session.h"
#include "star/engine/inference.h"

namespace star {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One S over the rounds (rank 0's view): kernel seconds of the slowest rank, tiles of every rank.
struct ScaleRuns {
  double scale_factor = 0;
  std::vector<double> prefill_ms, decode_ms_per_token, first_token_s, wall_decode_ms_per_token;
  SkipSoftmaxTiles prefill_tiles, decode_tiles;  // of the last round (every round skips the same)
  SkipSoftmaxTiles engine_tiles;  // what the engine counted in Phase 2 (every rank's), last round
};

double slowest(const std::vector<cpu::AttentionKernelClockReading>& ranks, bool decode) {
  double s = 0;
  for (const auto& r : ranks) s = std::max(s, decode ? r.decode.seconds : r.prefill.seconds);
  return s;
}

nlohmann::json tiles_json(const SkipSoftmaxTiles& t) {
  return {{"visited", t.visited},
          {"skipped", t.skipped},
          {"fraction", t.visited > 0 ? static_cast<double>(t.skipped) / static_cast<double>(t.visited) : 0.0}};
}

}  // namespace

CLI::App* add_skip_softmax_run_command(CLI::App& app, SkipSoftmaxRunCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "skip-softmax-run", "Skip Softmax in a model run: attention-kernel time of a prefill chunk and of decoding, by S (under mpirun)");
  cmd->add_option("--model", o.model_path, "HF model directory or .gguf file")->required();
  cmd->add_option("--context", o.context, "context tokens before the query chunk")
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--query", o.query, "query tokens: the prefill chunk at the end of the prompt")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--decode-tokens", o.decode_tokens, "tokens generated (the first comes from the query)")
      ->capture_default_str()->check(CLI::Range(2, 1 << 16));
  cmd->add_option("--rounds", o.rounds, "rounds over all S (the median is reported)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--scale-factors", o.scale_factors, "threshold_scale_factor values S, both phases (comma-separated)")
      ->capture_default_str()->delimiter(',')->check(CLI::Range(0.0, 1e12));
  cmd->add_option("--kv-dtype", o.kv_dtype, kKvDTypeHelp);
  add_attention_options(*cmd, o.attention_flags, o.attention_config_file);
  return cmd;
}

int run_skip_softmax_run_command(const CLI::App& command, const SkipSoftmaxRunCommandOptions& o) {
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

  EncodedContext context;
  context.layout = ShardLayout::of(*plan);
  context.algorithm = plan->algorithm;
  context.context_tokens = o.context;
  Result<std::unique_ptr<KvShard>> shard = engine.new_shard(plan->ranks[comm.rank()].shard.size());
  if (!shard.ok()) return fail(shard.status(), 3);
  context.shard = std::move(*shard);
  cpu::set_attention_kernel_clock(true);
  Result<Phase1Stats> phase1 = encode_context(engine, *plan, comm, *context.shard);
  if (!phase1.ok()) return fail(phase1.status(), 3);
  const cpu::AttentionKernelClockReading phase1_clock = cpu::read_attention_kernel_clock();
  std::vector<cpu::AttentionKernelClockReading> phase1_ranks(comm.size());
  if (Status s = comm.all_gather(&phase1_clock, sizeof phase1_clock, phase1_ranks.data()); !s.ok()) return fail(s, 3);
  std::vector<double> phase1_wall(comm.size());
  if (Status s = comm.all_gather(&phase1->wall_seconds, sizeof(double), phase1_wall.data()); !s.ok()) return fail(s, 3);

  GenerationOptions generation;
  generation.max_tokens = o.decode_tokens;
  generation.ignore_eos = true;
  std::vector<ScaleRuns> runs(1 + o.scale_factors.size());
  for (size_t i = 0; i < o.scale_factors.size(); ++i) runs[1 + i].scale_factor = o.scale_factors[i];
  // The first answer pays for first-touch allocations and cold caches: it runs once, unmeasured.
  if (Result<GenerationResult> g = answer_query(*model, comm, context, query_ids, generation); !g.ok()) {
    return fail(g.status(), 3);
  }
  std::vector<ScaleRuns*> order;
  for (ScaleRuns& run : runs) order.push_back(&run);
  for (int64_t round = 0; round < o.rounds; ++round) {
    // Every other round runs the S values backwards, so a drift in load hits both ends alike.
    std::reverse(order.begin(), order.end());
    for (ScaleRuns* next : order) {
      ScaleRuns& run = *next;
      context.layout.skip_softmax = {run.scale_factor, run.scale_factor};
      cpu::reset_attention_kernel_clock();
      Result<GenerationResult> g = answer_query(*model, comm, context, query_ids, generation);
      if (!g.ok()) return fail(g.status(), 3);
      const cpu::AttentionKernelClockReading clock = cpu::read_attention_kernel_clock();
      std::vector<cpu::AttentionKernelClockReading> ranks(comm.size());
      if (Status s = comm.all_gather(&clock, sizeof clock, ranks.data()); !s.ok()) return fail(s, 3);
      const auto later_tokens = static_cast<double>(o.decode_tokens - 1);
      run.prefill_ms.push_back(1e3 * slowest(ranks, false));
      run.decode_ms_per_token.push_back(1e3 * slowest(ranks, true) / later_tokens);
      run.first_token_s.push_back(g->first_token_seconds);
      run.wall_decode_ms_per_token.push_back(1e3 * g->decode_seconds / later_tokens);
      run.engine_tiles = g->skip_softmax_tiles;
      run.prefill_tiles = {};
      run.decode_tiles = {};
      for (const auto& r : ranks) {
        run.prefill_tiles += r.prefill.tiles;
        run.decode_tiles += r.decode.tiles;
      }
    }
  }
  cpu::set_attention_kernel_clock(false);
  if (comm.rank() == 0) {
    double phase1_kernel_s = 0;
    for (const auto& r : phase1_ranks) phase1_kernel_s = std::max(phase1_kernel_s, r.prefill.seconds + r.decode.seconds);
    const double dense_prefill = median(runs[0].prefill_ms), dense_decode = median(runs[0].decode_ms_per_token);
    for (const ScaleRuns& run : runs) {
      const double prefill = median(run.prefill_ms), decode = median(run.decode_ms_per_token);
      nlohmann::json j;
      j["algorithm"] = plan->algorithm;
      j["ranks"] = comm.size();
      j["blocks"] = plan->blocks.size();
      j["context"] = o.context;
      j["query"] = o.query;
      j["decode_tokens"] = o.decode_tokens;
      j["kv_dtype"] = kv_dtype_name(*kv_dtype);
      j["S"] = run.scale_factor;
      j["phase1_kernel_s"] = phase1_kernel_s;
      j["phase1_s"] = *std::max_element(phase1_wall.begin(), phase1_wall.end());
      j["prefill_tiles"] = tiles_json(run.prefill_tiles);
      j["decode_tiles"] = tiles_json(run.decode_tiles);
      j["engine_phase2_tiles"] = tiles_json(run.engine_tiles);
      j["prefill_kernel_ms"] = prefill;
      j["prefill_kernel_ms_rounds"] = run.prefill_ms;
      j["prefill_speedup"] = prefill > 0 ? dense_prefill / prefill : 0.0;
      j["decode_kernel_ms_per_token"] = decode;
      j["decode_kernel_ms_per_token_rounds"] = run.decode_ms_per_token;
      j["decode_speedup"] = decode > 0 ? dense_decode / decode : 0.0;
      j["first_token_s"] = median(run.first_token_s);
      j["decode_ms_per_token"] = median(run.wall_decode_ms_per_token);
      std::printf("%s\n", j.dump().c_str());
    }
  }
  return 0;
}

}  // namespace star
