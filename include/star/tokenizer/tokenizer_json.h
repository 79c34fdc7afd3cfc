// Loading an HF tokenizer.json (with its tokenizer_config.json) into a Tokenizer.
#pragma once

#include <filesystem>
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "star/common/status.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

// Supported: model "BPE" with a ByteLevel pre-tokenizer/decoder (GPT-2, Llama 3: Split(Regex) +
// ByteLevel, ignore_merges), and model "BPE" with byte_fallback and the "▁" normalizer of
// Llama 2 (mapped onto the SentencePiece tokenizer). Special tokens come from added_tokens; BOS
// from the post_processor, else tokenizer_config's bos_token; end-of-turn ids from
// tokenizer_config's eos_token plus the known end-of-turn tokens present in added_tokens.
// tokenizer_config may be null. Every error names the file and the problem.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_json(const std::filesystem::path& tokenizer_json,
                                                       const nlohmann::json& tokenizer_config);

}  // namespace star
