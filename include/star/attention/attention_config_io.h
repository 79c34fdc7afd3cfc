// AttentionConfig in and out: JSON (configs/*.json), validation, and the command-line options every
// binary shares. Like TensorRT-LLM's sparse_attention_config, one flat object whose `algorithm` key
// picks the method; each configs/<algorithm>.json lists the keys that algorithm reads.
//
//   {"algorithm": "pulsar", "block_size": 0, "sink_tokens": 64, "chunk_tokens": 32, ...}
//
// Keys are the AttentionConfig field names, plus the nested `sparse_attention` object
// (sparse_attention_config_io.h). Missing keys keep their defaults; unknown keys and
// wrongly typed values are errors that name the key.
#pragma once

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "star/attention/attention_config.h"
#include "star/common/status.h"

namespace star {

// Checks every field against its allowed range or set: the algorithm against the registry, then
// block_size, then every registered algorithm's parameter check (algorithm_registry.h). The error
// names the field, the value and what is allowed.
Status validate_attention_config(const AttentionConfig& config);

// Parses and validates.
Result<AttentionConfig> attention_config_from_json(const nlohmann::json& json);
// Every field, so that attention_config_from_json(attention_config_to_json(c)) == c.
nlohmann::json attention_config_to_json(const AttentionConfig& config);
// Reads a JSON file; errors name the path.
Result<AttentionConfig> load_attention_config(const std::filesystem::path& path);

// Adds --attention-config FILE and one flag per field (--attention, --block-size, --anchor-size,
// --sink-tokens, --chunk-tokens, --summary-fraction, --summary-tokens, --scoring, --position-mode,
// --keep-prefix-kv, --streaming-sink, --streaming-window), and for the sparse_attention section
// --sparse-attention JSON (replaces the file's section) or --skip-softmax-threshold S[,S] (Skip
// Softmax with S for both phases, or prefill and decode). Flags write into `flags`; call
// resolve_attention_options after parsing to combine them with the file.
void add_attention_options(CLI::App& app, AttentionConfig& flags, std::string& config_file);

// The file's config (defaults without one), overridden by each flag given on the command line, then
// validated. --summary-tokens sets summary_chunks = tokens / chunk_tokens (the resolved chunk size)
// and must be a multiple of it (0: no summaries); --summary-fraction clears summary_chunks so the
// fraction applies. The two exclude each other.
Result<AttentionConfig> resolve_attention_options(const CLI::App& app, const AttentionConfig& flags,
                                                  const std::string& config_file);

}  // namespace star
