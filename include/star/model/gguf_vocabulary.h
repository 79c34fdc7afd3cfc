// GgufVocabulary: the tokenizer a GGUF file embeds (tokenizer.ggml.* and tokenizer.chat_template),
// read without touching the weights. star/tokenizer/gguf_tokenizer.h turns it into a Tokenizer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "star/common/status.h"

namespace star {

class GgufFile;

struct GgufVocabulary {
  std::string model;                 // "llama" (SentencePiece-style BPE by scores), "gpt2" (byte-level BPE)
  std::string pre;                   // tokenizer.ggml.pre: the pre-tokenizer of a gpt2 vocabulary, or empty
  std::vector<std::string> tokens;
  std::vector<float> scores;         // empty when the file has none
  std::vector<int32_t> token_types;  // empty when the file has none
  std::vector<std::string> merges;   // "a b" pairs in rank order (byte-level BPE); empty otherwise
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;               // tokenizer.ggml.eot_token_id (Llama 3's <|eot_id|>), or -1
  std::optional<bool> add_bos;       // tokenizer.ggml.add_bos_token, when the file says
  bool add_space_prefix = true;      // absent key: true for "llama", false otherwise (as llama.cpp)
  std::string chat_template;         // tokenizer.chat_template, or empty
};

// Reads the vocabulary of an open GGUF file. Errors name the file and the key.
Result<GgufVocabulary> read_gguf_vocabulary(const GgufFile& gguf);

// Opens `path` and reads only its vocabulary (a model whose weights this build cannot load still
// has a readable tokenizer).
Result<GgufVocabulary> read_gguf_vocabulary(const std::filesystem::path& path);

}  // namespace star
