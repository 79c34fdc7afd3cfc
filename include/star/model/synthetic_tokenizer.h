// A small but real byte-level BPE tokenizer in Llama 3's tokenizer.json format, trained on a
// built-in paragraph, so synthetic models (star-mkmodel) ship a tokenizer that HF's `tokenizers`
// and `transformers` load and that exercises the same code paths as Llama 3's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/common/status.h"

namespace star {

// GPT-2's byte-to-unicode map, which HF's ByteLevel pre-tokenizer and decoder use: each byte
// becomes one printable code point (returned as UTF-8); e.g. 'a' -> "a", ' ' -> "Ġ", '\n' -> "Ċ".
std::string byte_level_symbol(uint8_t byte);
std::string byte_level_encode(std::string_view bytes);  // every byte through byte_level_symbol

struct ByteLevelBpe {
  std::vector<std::string> vocab;                   // id -> raw bytes; ids 0..255 are the bytes
  std::vector<std::pair<int32_t, int32_t>> merges;  // in rank order: (left id, right id)
};

// Classic BPE training: repeatedly merge the most frequent adjacent pair inside the words that
// Llama 3's pre-tokenizer regex splits `corpus` into (ties: the pair whose byte strings sort
// first), at most `max_merges` times and only while the best pair occurs at least twice. A merge
// whose result is already a token reuses its id, as HF's trainer does. Deterministic.
Result<ByteLevelBpe> train_byte_level_bpe(std::string_view corpus, int max_merges);

// The built-in training text (English prose, numbers, a little code).
std::string_view synthetic_tokenizer_corpus();

// What a synthetic model directory needs from its tokenizer.
struct SyntheticTokenizer {
  nlohmann::ordered_json tokenizer_json;    // tokenizer.json
  nlohmann::ordered_json tokenizer_config;  // tokenizer_config.json (with a Llama 3 chat template)
  int32_t size = 0;                         // BPE vocabulary + special tokens
  int32_t begin_of_text_id = -1;
  int32_t end_of_text_id = -1;
  int32_t eot_id = -1;
};

// The BPE trained on synthetic_tokenizer_corpus() with kSyntheticMerges merges, then the special
// tokens <|begin_of_text|>, <|end_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|>.
inline constexpr int kSyntheticMerges = 400;
Result<SyntheticTokenizer> make_synthetic_tokenizer(int64_t model_max_length);

}  // namespace star
