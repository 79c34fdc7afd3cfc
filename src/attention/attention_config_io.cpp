#include "star/attention/attention_config_io.h"

#include "star/attention/sparse_attention_config_io.h"

#include <array>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "star/attention/algorithm_registry.h"
#include "star/attention/config_checks.h"

namespace star {
namespace {

using FieldMember = std::variant<std::string AttentionConfig::*, int64_t AttentionConfig::*,
                                 double AttentionConfig::*, bool AttentionConfig::*>;

// One row per AttentionConfig field: its JSON key, its command-line flag and its help text.
struct Field {
  const char* key;
  const char* flag;
  const char* help;
  FieldMember member;
};

const std::array<Field, 15> kFields = {{
    {"algorithm", "--attention", algorithm_flag_help().c_str(), &AttentionConfig::algorithm},
    {"block_size", "--block-size", "context tokens per block (0: ceil(L / ranks))", &AttentionConfig::block_size},
    {"anchor_size", "--anchor-size", "star: anchor tokens (-1: the block size)", &AttentionConfig::anchor_size},
    {"anchor_positions", "--anchor-positions",
     "star: the anchor's RoPE positions: first (0..a-1) or adjacent (just before each block's pass)",
     &AttentionConfig::anchor_positions},
    {"boundary_overlap", "--boundary-overlap",
     "star, no-anchor, pulsar: previous block's last tokens read in front of each block (KV not kept)",
     &AttentionConfig::boundary_overlap},
    {"boundary_snap", "--boundary-snap",
     "star, no-anchor, pulsar: block edges move back up to this many tokens onto a sentence or line end",
     &AttentionConfig::boundary_snap},
    {"sink_tokens", "--sink-tokens", "pulsar: sink tokens taken from block 0", &AttentionConfig::sink_tokens},
    {"chunk_tokens", "--chunk-tokens", "pulsar: tokens per scored chunk", &AttentionConfig::chunk_tokens},
    {"summary_fraction", "--summary-fraction", "pulsar: summary budget as a fraction of the block size",
     &AttentionConfig::summary_fraction},
    {"summary_chunks", nullptr, nullptr, &AttentionConfig::summary_chunks},  // flag: --summary-tokens
    {"scoring", "--scoring", "pulsar: chunk scoring: max_idf, tfidf, bm25, entropy, even", &AttentionConfig::scoring},
    {"position_mode", "--position-mode", "pulsar: RoPE positions: sparse or contiguous", &AttentionConfig::position_mode},
    {"keep_prefix_kv", "--keep-prefix-kv", "pulsar: keep sink and summary KV in the shard (experiments)",
     &AttentionConfig::keep_prefix_kv},
    {"streaming_sink", "--streaming-sink", "streaming: sink tokens every token sees", &AttentionConfig::streaming_sink},
    {"streaming_window", "--streaming-window", "streaming: sliding window in tokens", &AttentionConfig::streaming_window},
}};

constexpr const char* kSummaryTokensFlag = "--summary-tokens";

// The nested sparse_attention object (sparse_attention_config_io.h) and its flags.
constexpr const char* kSparseKey = "sparse_attention";
constexpr const char* kSparseFlag = "--sparse-attention";
constexpr const char* kSkipSoftmaxFlag = "--skip-softmax-threshold";

std::string known_keys() {
  std::string keys;
  for (const Field& f : kFields) keys += keys.empty() ? f.key : std::string(", ") + f.key;
  return keys + ", " + kSparseKey;
}

Status wrong_type(const char* key, const char* expected, const nlohmann::json& value) {
  return invalid_argument("attention config key \"" + std::string(key) + "\" must be " + expected + ", got " +
                          value.type_name() + " " + value.dump());
}

// Stores `value` into the field, or says why its JSON type does not fit.
Status assign_from_json(const Field& field, const nlohmann::json& value, AttentionConfig& config) {
  return std::visit(
      [&](auto member) -> Status {
        using T = std::remove_reference_t<decltype(config.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!value.is_string()) return wrong_type(field.key, "a string", value);
          config.*member = value.get<std::string>();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!value.is_boolean()) return wrong_type(field.key, "true or false", value);
          config.*member = value.get<bool>();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          if (!value.is_number_integer()) return wrong_type(field.key, "an integer", value);
          if (value.is_number_unsigned() &&
              value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return wrong_type(field.key, "a 64-bit signed integer", value);
          }
          config.*member = value.get<int64_t>();
        } else {
          if (!value.is_number()) return wrong_type(field.key, "a number", value);
          config.*member = value.get<double>();
        }
        return ok_status();
      },
      field.member);
}

// "S" (both phases) or "S_prefill,S_decode", as given to --skip-softmax-threshold.
Result<SkipSoftmaxConfig> parse_skip_softmax_flag(const std::string& text) {
  const size_t comma = text.find(',');
  const std::string parts[2] = {text.substr(0, comma), comma == std::string::npos ? text : text.substr(comma + 1)};
  double values[2] = {0.0, 0.0};
  for (int i = 0; i < 2; ++i) {
    try {
      size_t used = 0;
      values[i] = std::stod(parts[i], &used);
      if (used != parts[i].size()) throw std::invalid_argument(parts[i]);
    } catch (const std::exception&) {
      return invalid_argument(std::string(kSkipSoftmaxFlag) + " = \"" + text +
                              "\" is not a number S or a pair PREFILL,DECODE");
    }
  }
  SkipSoftmaxConfig config;
  config.prefill_scale_factor = values[0];
  config.decode_scale_factor = values[1];
  return config;
}

}  // namespace

Status validate_attention_config(const AttentionConfig& c) {
  if (find_algorithm(c.algorithm) == nullptr) {
    return invalid_argument("attention config: algorithm = \"" + c.algorithm + "\" is not one of {" +
                            algorithm_names() + "}");
  }
  if (Status s = check_range("block_size", c.block_size, 0, kMaxTokens, " (0: ceil(L / ranks))"); !s.ok()) return s;
  for (const auto& [name, value] : {std::pair{"boundary_overlap", c.boundary_overlap}, {"boundary_snap", c.boundary_snap}}) {
    if (Status s = check_range(name, value, 0, kMaxTokens, " (0: off)"); !s.ok()) return s;
    if (value > 0 && !find_algorithm(c.algorithm)->repairs_block_edges) {
      return invalid_argument("attention config: " + std::string(name) + " = " + std::to_string(value) +
                              " applies to " + block_edge_repair_algorithm_names() + ", not to " + c.algorithm);
    }
  }
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    if (Status s = entry.check_parameters(c); !s.ok()) return s;
  }
  if (Status s = validate_sparse_attention_config(c.sparse); !s.ok()) {
    return Status(s.code(), "attention config: " + s.message());
  }
  return ok_status();
}

Result<AttentionConfig> attention_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) {
    return invalid_argument(std::string("attention config must be a JSON object, got ") + json.type_name());
  }
  AttentionConfig config;
  for (const auto& [key, value] : json.items()) {
    if (key == kSparseKey) {
      Result<SparseAttentionConfig> sparse = sparse_attention_config_from_json(value);
      if (!sparse.ok()) return Status(sparse.status().code(), "attention config: " + sparse.status().message());
      config.sparse = *sparse;
      continue;
    }
    const Field* field = nullptr;
    for (const Field& f : kFields) {
      if (key == f.key) field = &f;
    }
    if (field == nullptr) {
      return invalid_argument("unknown key \"" + key + "\" in attention config (known: " + known_keys() + ")");
    }
    if (Status s = assign_from_json(*field, value, config); !s.ok()) return s;
  }
  if (Status s = validate_attention_config(config); !s.ok()) return s;
  return config;
}

nlohmann::json attention_config_to_json(const AttentionConfig& config) {
  nlohmann::json json = nlohmann::json::object();
  for (const Field& f : kFields) {
    std::visit([&](auto member) { json[f.key] = config.*member; }, f.member);
  }
  json[kSparseKey] = sparse_attention_config_to_json(config.sparse);
  return json;
}

Result<AttentionConfig> load_attention_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open attention config " + path.string());
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("attention config " + path.string() + ": " + e.what());
  }
  Result<AttentionConfig> config = attention_config_from_json(json);
  if (!config.ok()) return Status(config.status().code(), path.string() + ": " + config.status().message());
  return config;
}

void add_attention_options(CLI::App& app, AttentionConfig& flags, std::string& config_file) {
  constexpr const char* kGroup = "Attention";
  app.add_option("--attention-config", config_file, "attention config JSON (flags override its values)")
      ->group(kGroup);
  for (const Field& f : kFields) {
    if (f.flag == nullptr) continue;
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<std::remove_reference_t<decltype(flags.*member)>, bool>) {
            app.add_flag(f.flag, flags.*member, f.help)->group(kGroup);
          } else {
            app.add_option(f.flag, flags.*member, f.help)->group(kGroup);
          }
        },
        f.member);
  }
  CLI::Option* tokens = app.add_option(kSummaryTokensFlag)
                            ->description("pulsar: summary tokens per block (a multiple of the chunk size)")
                            ->type_name("INT")
                            ->group(kGroup);
  tokens->excludes(app.get_option("--summary-fraction"));
  CLI::Option* sparse = app.add_option(kSparseFlag)
                            ->description("sparse_attention JSON, e.g. '{\"algorithm\": \"skip_softmax\", "
                                          "\"threshold_scale_factor\": {\"prefill\": 1000, \"decode\": 500}}' "
                                          "(replaces the file's sparse_attention)")
                            ->type_name("JSON")
                            ->group(kGroup);
  app.add_option(kSkipSoftmaxFlag)
      ->description("Skip Softmax threshold_scale_factor S for prefill and decode, or PREFILL,DECODE "
                    "(0: that phase runs dense)")
      ->type_name("S[,S]")
      ->group(kGroup)
      ->excludes(sparse);
  // On the command line a block size is given or left out (one block per rank); 0 is a mistake.
  app.get_option("--block-size")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v.find_first_not_of(" 0") == std::string::npos
                       ? std::string("block_size = 0: give a block size >= 1, or leave the flag out for one "
                                     "block per rank")
                       : std::string();
          },
          "", "block_size"))
      ->description("context tokens per block (>= 1; without it: ceil(L / ranks))");
}

Result<AttentionConfig> resolve_attention_options(const CLI::App& app, const AttentionConfig& flags,
                                                  const std::string& config_file) {
  AttentionConfig config;
  if (!config_file.empty()) {
    Result<AttentionConfig> loaded = load_attention_config(config_file);
    if (!loaded.ok()) return loaded.status();
    config = *loaded;
  }
  for (const Field& f : kFields) {
    if (f.flag == nullptr || app.count(f.flag) == 0) continue;
    std::visit([&](auto member) { config.*member = flags.*member; }, f.member);
  }
  if (app.count("--summary-fraction") > 0) config.summary_chunks = 0;
  if (app.count(kSummaryTokensFlag) > 0) {
    const std::string text = app.get_option(kSummaryTokensFlag)->as<std::string>();
    int64_t tokens = 0;
    try {
      size_t used = 0;
      tokens = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      return invalid_argument(std::string(kSummaryTokensFlag) + " = \"" + text + "\" is not an integer");
    }
    if (Status s = check_range("chunk_tokens", config.chunk_tokens, 1, kMaxTokens); !s.ok()) return s;
    if (tokens < 0 || tokens % config.chunk_tokens != 0) {
      return invalid_argument(std::string(kSummaryTokensFlag) + " = " + std::to_string(tokens) +
                              " must be a non-negative multiple of chunk_tokens = " +
                              std::to_string(config.chunk_tokens));
    }
    config.summary_chunks = tokens / config.chunk_tokens;
    if (tokens == 0) config.summary_fraction = 0.0;
  }
  if (app.count(kSparseFlag) > 0) {
    const std::string text = app.get_option(kSparseFlag)->as<std::string>();
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      return invalid_argument(std::string(kSparseFlag) + " is not JSON: " + e.what());
    }
    Result<SparseAttentionConfig> sparse = sparse_attention_config_from_json(json);
    if (!sparse.ok()) return Status(sparse.status().code(), std::string(kSparseFlag) + ": " + sparse.status().message());
    config.sparse = *sparse;
  }
  if (app.count(kSkipSoftmaxFlag) > 0) {
    Result<SkipSoftmaxConfig> skip = parse_skip_softmax_flag(app.get_option(kSkipSoftmaxFlag)->as<std::string>());
    if (!skip.ok()) return skip.status();
    config.sparse = SparseAttentionConfig{};
    config.sparse.algorithm = "skip_softmax";
    config.sparse.skip_softmax = *skip;
  }
  if (Status s = validate_attention_config(config); !s.ok()) return s;
  return config;
}

}  // namespace star
