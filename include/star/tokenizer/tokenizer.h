// Tokenizer: text <-> token ids, the interface every vocabulary type implements.
// Implementations: byte-level BPE from an HF tokenizer.json (Llama 3), and SentencePiece-style
// BPE by scores with byte fallback (GGUF "llama" vocabularies, Llama 2 tokenizer.json).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace star {

struct EncodeOptions {
  bool add_bos = false;        // prepend bos_id() (when the vocabulary has one)
  bool parse_special = false;  // recognise special-token text such as "<|eot_id|>" as that token;
                               // off: such text is encoded like any other text
};

// Implementations are immutable after construction: every method may be called from many
// threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const = 0;

  // The raw bytes token `id` stands for; for special tokens their text ("<|eot_id|>").
  // Empty for an id outside [0, vocab_size()) or not assigned to any token.
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;                   // -1: none
  virtual std::vector<int32_t> eos_ids() const = 0;     // end-of-text and end-of-turn ids, sorted
  // The id of a token by its text as the vocabulary file writes it ("<|eot_id|>", "<s>").
  virtual std::optional<int32_t> find_token(std::string_view piece) const = 0;
  // Special tokens (control, unknown) are left out of decoded text unless asked for.
  virtual bool is_special(int32_t id) const = 0;
  // True when encode() puts a space in front of the text (SentencePiece's dummy prefix) that
  // decoding a whole text must take away again.
  virtual bool adds_space_prefix() const { return false; }

  // The text of `ids`, read as a whole text from its start. Invalid UTF-8 becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
};

}  // namespace star
