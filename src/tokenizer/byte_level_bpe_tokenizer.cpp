#include "byte_level_bpe_tokenizer.h"

#include <algorithm>

#include "byte_unicode.h"

namespace star {
namespace {

// HF's ByteLevel decoder: a token whose characters all come from the byte mapping stands for
// those bytes; any other token (an added token with a space, say) for its own UTF-8 text.
std::string decoded_bytes(const std::string& piece) {
  auto bytes = unicode_to_bytes(piece);
  return bytes ? std::move(*bytes) : piece;
}

}  // namespace

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(Spec spec)
    : pre_tokenizer_(std::move(spec.pre_tokenizer)),
      merges_(std::move(spec.merges)),
      ignore_merges_(spec.ignore_merges),
      unk_id_(spec.unk_id),
      fuse_unk_(spec.fuse_unk),
      bos_id_(spec.bos_id),
      eos_ids_(std::move(spec.eos_ids)) {
  int32_t max_id = -1;
  for (const auto& [piece, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const auto& t : spec.added_tokens) max_id = std::max(max_id, t.id);
  token_bytes_.resize(max_id + 1);
  special_.resize(max_id + 1, false);
  byte_id_.fill(-1);

  for (const auto& [piece, id] : spec.vocab) {
    std::string bytes = decoded_bytes(piece);
    // Only fully mapped tokens can equal a pre-token: the others never match in encode().
    if (unicode_to_bytes(piece)) {
      if (bytes.size() == 1) byte_id_[static_cast<uint8_t>(bytes[0])] = id;
      id_by_bytes_.emplace(bytes, id);
    }
    token_bytes_[id] = std::move(bytes);
    id_by_piece_.emplace(piece, id);
  }
  for (const auto& t : spec.added_tokens) {
    token_bytes_[t.id] = decoded_bytes(t.content);
    special_[t.id] = t.special;
    id_by_piece_.insert_or_assign(t.content, t.id);
    matcher_.add(t.content, t.id, /*always=*/!t.special);
  }
}

std::vector<int32_t> ByteLevelBpeTokenizer::encode(std::string_view text,
                                                   const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  if (options.add_bos && bos_id_ >= 0) ids.push_back(bos_id_);
  std::vector<std::string_view> pieces;
  std::vector<std::string_view> next;
  for (const auto& fragment : matcher_.split(text, options.parse_special)) {
    if (fragment.id >= 0) {
      ids.push_back(fragment.id);
      continue;
    }
    pieces.assign(1, fragment.text);
    for (const RegexSplitter& step : pre_tokenizer_) {
      next.clear();
      for (std::string_view piece : pieces) step.split(piece, next);
      pieces.swap(next);
    }
    for (std::string_view piece : pieces) encode_pre_token(piece, ids);
  }
  return ids;
}

void ByteLevelBpeTokenizer::encode_pre_token(std::string_view bytes, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (auto it = id_by_bytes_.find(bytes); it != id_by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(bytes.size());
  for (char c : bytes) {
    int32_t id = byte_id_[static_cast<uint8_t>(c)];
    if (id < 0) {
      if (unk_id_ < 0) continue;  // HF drops a character it cannot represent
      if (fuse_unk_ && !symbols.empty() && symbols.back() == unk_id_) continue;
      id = unk_id_;
    }
    symbols.push_back(id);
  }
  merges_.apply(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

std::string ByteLevelBpeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return token_bytes_[id];
}

std::optional<int32_t> ByteLevelBpeTokenizer::find_token(std::string_view piece) const {
  auto it = id_by_piece_.find(piece);
  if (it == id_by_piece_.end()) return std::nullopt;
  return it->second;
}

bool ByteLevelBpeTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && special_[id];
}

}  // namespace star
