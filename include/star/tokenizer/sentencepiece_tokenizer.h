// SentencePiece-style BPE by scores with byte fallback: the vocabulary of GGUF "llama" models
// (stories260K, Llama 2). Encoding follows llama.cpp's llm_tokenizer_spm exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "star/common/status.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

// Token types as GGUF's tokenizer.ggml.token_type stores them.
enum class SpTokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,       // BOS, EOS, chat markers: text only with parse_special
  kUserDefined = 4,   // always matched whole in text
  kUnused = 5,
  kByte = 6,          // "<0xXX>": the fallback for bytes no piece covers
};

// pieces: the vocabulary with spaces written as "▁" (U+2581); scores: higher merges first;
// token_types: one SpTokenType value per piece. bos_id / eos_id: -1 for none.
// add_space_prefix: encode() prefixes " " to the text (and after each special token).
Result<std::unique_ptr<Tokenizer>> make_sentencepiece_tokenizer(std::vector<std::string> pieces,
                                                                std::vector<float> scores,
                                                                std::vector<int32_t> token_types,
                                                                int32_t bos_id, int32_t eos_id,
                                                                bool add_space_prefix);

}  // namespace star
