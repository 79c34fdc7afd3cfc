// ByteLevelBpeTokenizer: GPT-2 / Llama 3 byte-level BPE (HF tokenizers' BPE model with the
// ByteLevel pre-tokenizer and decoder). tokenizer_json_byte_level.cpp builds its Spec from a file.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bpe_merges.h"
#include "regex_splitter.h"
#include "special_token_matcher.h"
#include "star/tokenizer/tokenizer.h"
#include "string_map.h"

namespace star {

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  struct AddedToken {
    std::string content;
    int32_t id;
    bool special;  // special: matched in text only with parse_special; else always (as HF)
  };
  struct Spec {
    std::vector<RegexSplitter> pre_tokenizer;  // steps applied in order, each to every piece
    StringMap<int32_t> vocab;                  // model vocabulary, strings as the file writes them
    BpeMergeTable merges;
    bool ignore_merges = false;  // a pre-token that is itself in the vocabulary is emitted whole
    int32_t unk_id = -1;         // for bytes missing from the vocabulary; -1: they are dropped
    bool fuse_unk = false;
    std::vector<AddedToken> added_tokens;
    int32_t bos_id = -1;
    std::vector<int32_t> eos_ids;
  };

  explicit ByteLevelBpeTokenizer(Spec spec);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override;
  std::string token_bytes(int32_t id) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(token_bytes_.size()); }
  int32_t bos_id() const override { return bos_id_; }
  std::vector<int32_t> eos_ids() const override { return eos_ids_; }
  std::optional<int32_t> find_token(std::string_view piece) const override;
  bool is_special(int32_t id) const override;

 private:
  // Appends the ids of one pre-token (raw bytes).
  void encode_pre_token(std::string_view bytes, std::vector<int32_t>& out) const;

  std::vector<RegexSplitter> pre_tokenizer_;
  BpeMergeTable merges_;
  bool ignore_merges_;
  int32_t unk_id_;
  bool fuse_unk_;
  int32_t bos_id_;
  std::vector<int32_t> eos_ids_;
  StringMap<int32_t> id_by_bytes_;     // model vocabulary keyed by the bytes each token stands for
  std::array<int32_t, 256> byte_id_;   // the single-byte tokens; -1 where missing
  StringMap<int32_t> id_by_piece_;     // added tokens and vocabulary, as the file writes them
  std::vector<std::string> token_bytes_;
  std::vector<bool> special_;
  SpecialTokenMatcher matcher_;
};

}  // namespace star
