// star-eval: RULER-style accuracy of every attention algorithm on any model, under mpirun.
// Generates the tasks at each length in the model's own tokens (deterministic for a seed), runs
// each through the engine in-process for each algorithm, scores them as RULER does and writes
//   OUT/results.json     every cell (task, length, algorithm, score) and the run's settings
//   OUT/results.md       the tables: score per task and algorithm, and the difference to dense
//   OUT/tasks/L.jsonl    the samples in star-run's input format (input_context, input_query, outputs)
//   OUT/preds/L/A.jsonl  each sample's prediction and score
// --variants FILE adds columns given as attention config JSON (star/eval/eval_variants.h).
// --backend cuda runs every request on the GPU (one per rank); its KV is bf16.
// --prompt-format: the model's chat template (the default where it has one) or RULER's plain
// prompt (star/eval/eval_prompt.h); --haystack: the essay haystacks from text on every Debian
// machine (star/eval/haystack_text.h) or generated sentences.
// scripts/eval/plot_heatmap.py draws OUT/results.json as PNG heatmaps.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "star/attention/algorithm_registry.h"
#include "star/attention/attention_config_io.h"
#include "star/attention/plan_builder.h"
#include "star/backend/backend_selection.h"
#include "star/common/logging.h"
#include "star/common/thread_environment.h"
#include "star/dist/mpi_session.h"
#include "star/engine/inference.h"
#include "star/engine/phase1_job.h"
#include "star/engine/request_batch.h"
#include "star/engine/runtime_model.h"
#include "star/eval/eval_matrix.h"
#include "star/eval/eval_prompt.h"
#include "star/eval/eval_variants.h"
#include "star/eval/haystack_text.h"
#include "star/eval/ruler_scoring.h"
#include "star/eval/ruler_tasks.h"

namespace {

using nlohmann::json;
using namespace star;
namespace fs = std::filesystem;

struct Options {
  std::string model;
  std::string out;
  std::vector<std::string> tasks;
  std::vector<int64_t> lengths;
  std::vector<std::string> algorithms = eval::default_algorithms();
  int samples = 20;
  uint64_t seed = 1;
  int blocks = 4;
  int64_t max_tokens = 48;
  int concurrency = 1;
  bool tasks_only = false;
  std::string log_level = "warn";
  std::string backend = "cpu";
  std::string kv_dtype;  // empty on the command line: the backend's own (resolved in main)
  std::string attention_config_file;
  AttentionConfig attention;
  std::string variants_file;
  std::string prompt_format;  // empty: chat when the model has a chat template
  std::string haystack = "debian";
  std::string haystack_root = "/";  // where --haystack debian reads its files (a copy of a machine's, to match it)
  // Every column of the tables: the --algorithms on the flags' parameters, then the --variants.
  std::vector<eval::EvalVariant> columns;
};

Status write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return internal_error("cannot write '" + path.string() + "'");
  return ok_status();
}

// The sample as it is fed: context_tokens and query_tokens count the prompt's ids.
json sample_line(const eval::TaskSample& s, int64_t length, const eval::PromptIds& ids) {
  return json{{"task", s.task},           {"index", s.index},     {"length", length},
              {"input_context", s.context}, {"input_query", s.query}, {"outputs", s.outputs},
              {"context_tokens", ids.context.size()}, {"query_tokens", ids.query.size()}};
}

// What every sample is fed as: the prompt format, its template, and the essay haystacks' text.
struct PromptSetup {
  eval::PromptFormat format = eval::PromptFormat::kPlain;
  eval::ChatTemplate chat;
  int64_t prompt_tokens = 0;
  std::vector<std::string> prose;
  // --haystack debian: the files read, relative to --haystack-root (the same on every machine whose
  // files match), and the characters of prose they gave; results.json records both.
  std::vector<std::string> haystack_files;
  int64_t haystack_chars = 0;
  eval::TaskOptions task_options() const { return {.prompt_tokens = prompt_tokens, .prose = prose}; }
};

Result<PromptSetup> prompt_setup(const Options& o, const RuntimeModel& model) {
  PromptSetup p;
  p.chat = eval::chat_template_of(model.chat_template, *model.tokenizer);
  if (o.prompt_format.empty()) {
    p.format = p.chat.format == ChatFormat::kNone ? eval::PromptFormat::kPlain : eval::PromptFormat::kChat;
  } else {
    p.format = *eval::parse_prompt_format(o.prompt_format);
    if (p.format == eval::PromptFormat::kChat && p.chat.format == ChatFormat::kNone) {
      return invalid_argument("--prompt-format chat: " + o.model + " has no chat template starserve can render");
    }
  }
  Result<int64_t> overhead = eval::prompt_overhead_tokens(p.format, p.chat, *model.tokenizer);
  if (!overhead.ok()) return overhead.status();
  p.prompt_tokens = *overhead;
  if (o.haystack == "debian") {
    Result<std::vector<fs::path>> files = eval::debian_haystack_files(o.haystack_root);
    if (!files.ok() && o.haystack_root != "/") {
      return Status(files.status().code(), "--haystack-root " + o.haystack_root + ": " + files.status().message());
    }
    if (!files.ok()) return files.status();
    Result<std::vector<std::string>> prose = eval::haystack_sentences(*files);
    if (!prose.ok()) return prose.status();
    p.prose = std::move(prose).value();
    for (const fs::path& file : *files) p.haystack_files.push_back(file.lexically_relative(o.haystack_root).string());
    for (const std::string& sentence : p.prose) p.haystack_chars += static_cast<int64_t>(sentence.size());
  }
  return p;
}

// Every sample of every task at one length; every rank makes the same ones (same seed, same code).
// A task that does not fit the length in this model's tokens is left out there (its cells show
// "–"); --tasks and the lengths were checked before, so that is the only way generation fails.
std::vector<eval::TaskSample> samples_at(const Options& o, const Tokenizer& tok, const PromptSetup& prompt,
                                         int64_t length, bool root) {
  std::vector<eval::TaskSample> all;
  for (const std::string& task : o.tasks) {
    auto s = eval::make_task_samples(task, tok, length, o.samples, o.seed, prompt.task_options());
    if (!s.ok()) {
      if (root) spdlog::warn("{} left out at {} tokens: {}", task, length, s.status().message());
      continue;
    }
    all.insert(all.end(), s->begin(), s->end());
  }
  return all;
}

// The backend's own verdict on a column (its plan's steps, RocketKV), so that a column it cannot run
// (ring or RocketKV on cuda) stops the run before any request rather than after earlier columns.
Status backend_runs_column(const RuntimeModel& model, int ranks, const eval::EvalVariant& column,
                           std::span<const int32_t> context, int blocks) {
  const AttentionConfig config = eval::with_blocks(column.config, static_cast<int64_t>(context.size()), blocks);
  Result<BlockPlan> plan = build_block_plan(context, ranks, config, model.sentence_ends);
  if (!plan.ok()) return plan.status();
  if (Status s = check_backend_runs(*model.engine, *plan); !s.ok()) return s;
  return config.sparse.algorithm == "rocket" ? model.engine->supports_rocket() : ok_status();
}

// Every sample's answer (rank 0; the other ranks get empty texts): one request at a time, or
// `concurrency` at a time through one step engine (requests[i] asks samples[i]). A request's error
// names its task and sample.
Result<std::vector<std::string>> answer_cell(const RuntimeModel& model, Communicator& comm,
                                             std::span<const InferenceRequest> requests,
                                             const std::vector<eval::TaskSample>& samples, int concurrency) {
  std::vector<std::string> texts(requests.size());
  auto sample_error = [&samples](size_t i, const Status& s) {
    return Status(s.code(), samples[i].task + " sample " + std::to_string(samples[i].index) + ": " + s.message());
  };
  if (concurrency == 1) {
    for (size_t i = 0; i < requests.size(); ++i) {
      Result<InferenceOutcome> outcome = run_inference(model, comm, requests[i]);
      if (!outcome.ok()) return sample_error(i, outcome.status());
      texts[i] = std::move(outcome->generation.text);
    }
    return texts;
  }
  Result<std::vector<BatchAnswer>> answers = run_request_batch(model, comm, requests, concurrency);
  if (!answers.ok()) return answers.status();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!(*answers)[i].status.ok()) return sample_error(i, (*answers)[i].status);
    texts[i] = std::move((*answers)[i].generation.text);
  }
  return texts;
}

// OUT/results.json and results.md for the cells scored so far (columns not run yet show "–"):
// written after every column, so a run cut short leaves the tables of what it finished.
Result<std::string> write_results(const Options& o, const PromptSetup& prompt, const std::vector<eval::CellScore>& cells,
                                  int ranks) {
  std::vector<std::string> names;
  json configs = json::object();
  for (const eval::EvalVariant& column : o.columns) {
    names.push_back(column.name);
    configs[column.name] = attention_config_to_json(column.config);
  }
  json results{{"model", o.model},         {"seed", o.seed},     {"samples", o.samples},
               {"blocks", o.blocks},       {"max_tokens", o.max_tokens}, {"tasks", o.tasks},
               {"lengths", o.lengths},     {"algorithms", names}, {"backend", o.backend}, {"kv_dtype", o.kv_dtype},
               {"prompt_format", eval::prompt_format_name(prompt.format)}, {"haystack", o.haystack},
               {"ranks", ranks},           {"haystack_files", prompt.haystack_files},
               {"haystack_chars", prompt.haystack_chars},
               {"attention", attention_config_to_json(o.attention)}, {"configs", configs}, {"cells", json::array()}};
  for (const auto& c : cells) {
    results["cells"].push_back(
        {{"task", c.task}, {"length", c.length}, {"algorithm", c.algorithm}, {"score", c.score}, {"samples", c.samples}});
  }
  std::string md = "# star-eval: " + o.model + "\n\n" + std::to_string(o.samples) + " samples per task, seed " +
                   std::to_string(o.seed) + ", " + std::to_string(o.blocks) + " blocks, " +
                   std::to_string(ranks) + " rank(s), " + o.backend + " backend, KV " + o.kv_dtype + ", " +
                   eval::prompt_format_name(prompt.format) +
                   " prompts, " + o.haystack + " haystacks; RULER string match (all expected strings present).\n\n" +
                   eval::markdown_tables(cells, o.tasks, o.lengths, names);
  Status a = write_text(fs::path(o.out) / "results.json", results.dump(2) + "\n");
  Status b = write_text(fs::path(o.out) / "results.md", md);
  if (!a.ok()) return a;
  if (!b.ok()) return b;
  return md;
}

int run(const Options& o, Communicator& comm) {
  const bool root = comm.rank() == 0;
  Result<RuntimeModel> model = open_model(o.model, *parse_kv_dtype(o.kv_dtype));
  if (!model.ok()) {
    if (root) spdlog::error("{}", model.status().to_string());
    return 1;
  }
  // The answer's tokens follow the prompt inside the model's positions (RULER sizes its prompts the
  // same way: 8K with 48 answer tokens is a prompt of 8,144), so a length without room for them
  // would fail at its first request, after the earlier lengths ran.
  const int64_t positions = model->llama->config().max_position_embeddings;
  for (int64_t length : o.lengths) {
    if (length + o.max_tokens > positions) {
      if (root) {
        spdlog::error("--lengths {} with --max-tokens {} needs {} positions; the model has {} (use --lengths {} or less)",
                      length, o.max_tokens, length + o.max_tokens, positions, positions - o.max_tokens);
      }
      return 2;
    }
  }
  // Collective; a rank's own failure (its GPU) is logged by that rank.
  if (Status s = select_backend(*model, o.backend); !s.ok()) {
    spdlog::error("{}", s.to_string());
    return 1;
  }
  const Tokenizer& tok = *model->tokenizer;
  Result<PromptSetup> prompt = prompt_setup(o, *model);
  if (!prompt.ok()) {
    if (root) spdlog::error("{}", prompt.status().to_string());
    return 2;
  }
  std::vector<eval::CellScore> cells;
  for (int64_t length : o.lengths) {
    const std::vector<eval::TaskSample> samples = samples_at(o, tok, *prompt, length, root);
    if (samples.empty()) {
      if (root) spdlog::error("no task fits {} tokens of this model", length);
      return 2;
    }
    std::vector<eval::PromptIds> ids;
    for (const eval::TaskSample& s : samples) {
      Result<eval::EvalPrompt> p = eval::eval_prompt(s, prompt->format, prompt->chat);
      if (!p.ok()) {
        if (root) spdlog::error("{} sample {}: {}", s.task, s.index, p.status().to_string());
        return 3;
      }
      ids.push_back(eval::encode_prompt(*p, prompt->format, tok));
    }
    if (root) {
      std::string lines;
      for (size_t i = 0; i < samples.size(); ++i) lines += sample_line(samples[i], length, ids[i]).dump() + "\n";
      if (Status st = write_text(fs::path(o.out) / "tasks" / (std::to_string(length) + ".jsonl"), lines); !st.ok()) {
        spdlog::error("{}", st.to_string());
        return 1;
      }
    }
    if (o.tasks_only) continue;
    for (const eval::EvalVariant& column : o.columns) {
      if (Status st = backend_runs_column(*model, comm.size(), column, ids.front().context, o.blocks); !st.ok()) {
        if (root) spdlog::error("column {} at {} tokens: {}", column.name, length, st.to_string());
        return 2;
      }
    }
    for (const eval::EvalVariant& column : o.columns) {
      const std::string& algorithm = column.name;
      const AttentionConfig& base = column.config;
      std::map<std::string, double> sums;
      std::string lines;
      std::vector<InferenceRequest> requests(samples.size());
      for (size_t i = 0; i < samples.size(); ++i) {
        requests[i].context_ids = ids[i].context;
        requests[i].query_ids = ids[i].query;
        requests[i].attention = eval::with_blocks(base, static_cast<int64_t>(ids[i].context.size()), o.blocks);
        requests[i].generation.max_tokens = o.max_tokens;
      }
      Result<std::vector<std::string>> answers = answer_cell(*model, comm, requests, samples, o.concurrency);
      if (!answers.ok()) {
        if (root) spdlog::error("at {} tokens, {}: {}", length, algorithm, answers.status().to_string());
        return 3;
      }
      for (size_t i = 0; i < samples.size(); ++i) {
        const eval::TaskSample& s = samples[i];
        if (!root) continue;
        const std::string& text = (*answers)[i];
        const double score = eval::score(eval::find_task(s.task)->metric, text, s.outputs);
        sums[s.task] += score;
        json line = sample_line(s, length, ids[i]);
        line.erase("input_context");
        line["algorithm"] = algorithm;
        line["pred"] = text;
        line["score"] = score;
        lines += line.dump() + "\n";
      }
      if (!root) continue;
      for (const std::string& task : o.tasks) {
        if (sums.contains(task)) cells.push_back({task, length, algorithm, sums[task] / o.samples, o.samples});
      }
      const fs::path preds = fs::path(o.out) / "preds" / std::to_string(length) / (algorithm + ".jsonl");
      if (Status st = write_text(preds, lines); !st.ok()) {
        spdlog::error("{}", st.to_string());
        return 1;
      }
      double mean = 0;
      for (const auto& [task, sum] : sums) mean += sum / o.samples;
      spdlog::warn("{} tokens, {}: mean score {:.1f}% over {} tasks", length, algorithm, 100.0 * mean / sums.size(),
                   sums.size());
      if (Result<std::string> md = write_results(o, *prompt, cells, comm.size()); !md.ok()) {
        spdlog::error("{}", md.status().to_string());
        return 1;
      }
    }
  }
  if (!root || o.tasks_only) return 0;
  Result<std::string> md = write_results(o, *prompt, cells, comm.size());
  if (!md.ok()) {
    spdlog::error("{}", md.status().to_string());
    return 1;
  }
  std::fputs(md->c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  star::ensure_thread_environment(argv);
  star::Result<star::MpiSession> mpi = star::MpiSession::start(&argc, &argv);
  if (!mpi.ok()) {
    std::fprintf(stderr, "star-eval: %s\n", mpi.status().to_string().c_str());
    return 1;
  }
  star::Communicator& comm = *mpi->world;
  CLI::App app{"star-eval: RULER-style accuracy of each attention algorithm (task x algorithm x length)"};
  Options o;
  for (const auto& t : star::eval::ruler_tasks()) o.tasks.emplace_back(t.name);
  app.add_option("--model", o.model, "HF model directory or .gguf file")->required();
  app.add_option("--out", o.out, "output directory")->required();
  app.add_option("--lengths", o.lengths, "context + query lengths in the model's tokens")->required()->delimiter(',');
  app.add_option("--tasks", o.tasks, "tasks (default: all)")->delimiter(',')->capture_default_str();
  app.add_option("--algorithms", o.algorithms,
                 "algorithms to compare, from: " + star::algorithm_names() +
                     ", pulsar-<scoring>; none: only the --variants columns")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--samples", o.samples, "samples per task and length")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--seed", o.seed, "task generation seed")->capture_default_str();
  app.add_option("--variants", o.variants_file,
                 "JSON object of more columns, name: attention config (e.g. {\"star-overlap64\": "
                 "{\"algorithm\": \"star\", \"boundary_overlap\": 64}})")
      ->check(CLI::ExistingFile);
  app.add_option("--blocks", o.blocks, "context blocks for the blocked algorithms")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-tokens", o.max_tokens, "tokens generated per answer at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--concurrency", o.concurrency,
                 "samples of a cell run together, up to this many at a time, their decode steps batched (a "
                 "GPU's kernel launches shared); the answers are the same")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--prompt-format", o.prompt_format,
                 "plain (RULER's text) or chat (the model's chat template); default: chat when the model has one")
      ->check(CLI::IsMember({"plain", "chat"}));
  app.add_option("--haystack", o.haystack,
                 "essay haystacks from debian (licenses and Python docstrings on every Debian machine) or generated "
                 "sentences")
      ->check(CLI::IsMember({"debian", "generated"}))
      ->capture_default_str();
  app.add_option("--haystack-root", o.haystack_root,
                 "the folder --haystack debian reads usr/share/common-licenses and usr/lib/python3.*/ under (a copy "
                 "of another machine's files makes its samples)")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  app.add_flag("--tasks-only", o.tasks_only, "write OUT/tasks/*.jsonl and stop");
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")->capture_default_str();
  app.add_option("--backend", o.backend, "cpu, or cuda (one GPU per rank, by local rank)")
      ->capture_default_str()
      ->check(CLI::IsMember(star::backend_names()));
  app.add_option("--kv-dtype", o.kv_dtype, star::kKvDTypeHelp);
  star::add_attention_options(app, o.attention, o.attention_config_file);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm.rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
  }
  star::init_logging(comm.rank(), o.log_level);
  const bool root = comm.rank() == 0;
  if (app.count("--attention") > 0) {
    if (root) spdlog::error("--attention: star-eval runs every algorithm of --algorithms; the other flags set their parameters");
    return 2;
  }
  if (o.algorithms == std::vector<std::string>{"none"}) {
    o.algorithms.clear();
  } else if (std::find(o.algorithms.begin(), o.algorithms.end(), "none") != o.algorithms.end()) {
    if (root) spdlog::error("--algorithms: none stands alone (only the --variants columns)");
    return 2;
  }
  if (app.count("--haystack-root") > 0 && o.haystack != "debian") {
    if (root) spdlog::error("--haystack-root: only --haystack debian reads files");
    return 2;
  }
  for (const std::string& task : o.tasks) {
    if (auto t = star::eval::find_task(task); !t.ok()) {
      if (root) spdlog::error("--tasks: {}", t.status().message());
      return 2;
    }
  }
  for (const std::string& a : o.algorithms) {
    if (auto c = star::eval::algorithm_config(a, {}); !c.ok()) {
      if (root) spdlog::error("--algorithms: {}", c.status().message());
      return 2;
    }
  }
  if (star::Status s = star::check_backend(o.backend); !s.ok()) {
    spdlog::error("{}", s.to_string());
    return 2;
  }
  star::Result<star::KvDType> kv_dtype = star::resolve_kv_dtype(o.backend, o.kv_dtype);
  if (!kv_dtype.ok()) {
    if (root) spdlog::error("{}", kv_dtype.status().to_string());
    return 2;
  }
  o.kv_dtype = star::kv_dtype_name(*kv_dtype);
  star::Result<star::AttentionConfig> attention =
      star::resolve_attention_options(app, o.attention, o.attention_config_file);
  if (!attention.ok()) {
    if (root) spdlog::error("{}", attention.status().to_string());
    return 2;
  }
  o.attention = *attention;
  for (const std::string& a : o.algorithms) {
    star::AttentionConfig config = *star::eval::algorithm_config(a, o.attention);
    // A flag one algorithm cannot take (boundary_overlap on dense) is an error, not ignored.
    if (star::Status s = star::validate_attention_config(config); !s.ok()) {
      if (root) spdlog::error("--algorithms {}: {} (give such settings per column with --variants)", a, s.message());
      return 2;
    }
    o.columns.push_back({a, config});
  }
  if (!o.variants_file.empty()) {
    auto variants = star::eval::load_eval_variants(o.variants_file, o.algorithms);
    if (!variants.ok()) {
      if (root) spdlog::error("--variants: {}", variants.status().to_string());
      return 2;
    }
    o.columns.insert(o.columns.end(), variants->begin(), variants->end());
  }
  if (o.columns.empty()) {
    if (root) spdlog::error("--algorithms none without --variants: nothing to run");
    return 2;
  }
  return run(o, comm);
}
