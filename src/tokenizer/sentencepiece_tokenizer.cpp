#include "star/tokenizer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>

#include "byte_piece.h"
#include "special_token_matcher.h"
#include "special_token_names.h"
#include "string_map.h"

namespace star {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁" U+2581

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i).starts_with(from)) {
      out.append(to);
      i += from.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                         std::vector<SpTokenType> types, std::array<int32_t, 256> byte_token,
                         int32_t bos_id, int32_t eos_id, bool add_space_prefix)
      : pieces_(std::move(pieces)),
        scores_(std::move(scores)),
        types_(std::move(types)),
        byte_token_(byte_token),
        bos_id_(bos_id),
        add_space_prefix_(add_space_prefix) {
    if (eos_id >= 0) eos_ids_.push_back(eos_id);
    token_bytes_.resize(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id) {
      const std::string& piece = pieces_[id];
      // A later duplicate wins, as in llama.cpp's token_to_id.
      id_by_piece_.insert_or_assign(piece, static_cast<int32_t>(id));
      switch (types_[id]) {
        case SpTokenType::kByte:
          token_bytes_[id] = std::string(1, static_cast<char>(*parse_byte_piece(piece)));
          break;
        case SpTokenType::kControl:
          if (is_end_of_turn_name(piece)) eos_ids_.push_back(static_cast<int32_t>(id));
          [[fallthrough]];
        case SpTokenType::kUnknown:
          token_bytes_[id] = piece;
          matcher_.add(piece, static_cast<int32_t>(id), /*always=*/false);
          break;
        case SpTokenType::kUserDefined:
          token_bytes_[id] = replace_all(piece, kSpaceMark, " ");
          matcher_.add(piece, static_cast<int32_t>(id), /*always=*/true);
          break;
        case SpTokenType::kNormal:
        case SpTokenType::kUnused:
          token_bytes_[id] = replace_all(piece, kSpaceMark, " ");
          break;
      }
    }
    std::sort(eos_ids_.begin(), eos_ids_.end());
    eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
  }

  // As llama.cpp: specials cut the text into fragments; each text fragment that starts the text
  // or follows a special gets the space prefix; spaces become "▁"; then the score-driven merge.
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override {
    std::vector<int32_t> ids;
    if (options.add_bos && bos_id_ >= 0) ids.push_back(bos_id_);
    bool after_special = true;
    for (const auto& fragment : matcher_.split(text, options.parse_special)) {
      if (fragment.id >= 0) {
        ids.push_back(fragment.id);
        after_special = true;
        continue;
      }
      std::string prefixed = add_space_prefix_ && after_special ? " " : "";
      prefixed.append(fragment.text);
      encode_fragment(replace_all(prefixed, " ", kSpaceMark), ids);
      after_special = false;
    }
    return ids;
  }

  std::string token_bytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return token_bytes_[id];
  }
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  int32_t bos_id() const override { return bos_id_; }
  std::vector<int32_t> eos_ids() const override { return eos_ids_; }
  std::optional<int32_t> find_token(std::string_view piece) const override {
    auto it = id_by_piece_.find(piece);
    if (it == id_by_piece_.end()) return std::nullopt;
    return it->second;
  }
  bool is_special(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return false;
    return types_[id] == SpTokenType::kControl || types_[id] == SpTokenType::kUnknown;
  }
  bool adds_space_prefix() const override { return add_space_prefix_; }

 private:
  struct Symbol {
    int32_t prev;
    int32_t next;
    size_t offset;
    size_t size;  // 0 once merged into its left neighbour
  };
  struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    size_t size;
    // std::priority_queue pops the greatest: highest score, then leftmost.
    bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
  };

  std::optional<int32_t> piece_id(std::string_view piece) const {
    auto it = id_by_piece_.find(piece);
    if (it == id_by_piece_.end()) return std::nullopt;
    return it->second;
  }

  // llm_tokenizer_spm: start from characters (by the UTF-8 lead byte's length), merge the
  // adjacent pair whose concatenation is a piece with the highest score until none is left, then
  // emit each symbol's piece, or its bytes as byte tokens when it is not a piece.
  void encode_fragment(const std::string& text, std::vector<int32_t>& out) const {
    static constexpr std::array<size_t, 16> kLength = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    std::vector<Symbol> symbols;
    for (size_t offset = 0; offset < text.size();) {
      const size_t size = std::min(kLength[static_cast<uint8_t>(text[offset]) >> 4], text.size() - offset);
      const auto index = static_cast<int32_t>(symbols.size());
      symbols.push_back({index - 1, offset + size == text.size() ? -1 : index + 1, offset, size});
      offset += size;
    }
    std::priority_queue<Bigram> queue;
    auto offer = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const size_t size = symbols[left].size + symbols[right].size;
      if (auto id = piece_id(std::string_view(text).substr(symbols[left].offset, size))) {
        queue.push({left, right, scores_[*id], size});
      }
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) offer(i - 1, i);

    while (!queue.empty()) {
      const Bigram bigram = queue.top();
      queue.pop();
      Symbol& left = symbols[bigram.left];
      Symbol& right = symbols[bigram.right];
      // Stale: one side was merged away or grew since the pair was offered.
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      offer(left.prev, bigram.left);
      offer(bigram.left, left.next);
    }

    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
      const std::string_view piece = std::string_view(text).substr(symbols[i].offset, symbols[i].size);
      if (auto id = piece_id(piece)) {
        out.push_back(*id);
      } else {
        for (char c : piece) out.push_back(byte_token_[static_cast<uint8_t>(c)]);
      }
    }
  }

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<SpTokenType> types_;
  std::array<int32_t, 256> byte_token_;
  int32_t bos_id_;
  std::vector<int32_t> eos_ids_;
  bool add_space_prefix_;
  StringMap<int32_t> id_by_piece_;
  std::vector<std::string> token_bytes_;
  SpecialTokenMatcher matcher_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_sentencepiece_tokenizer(std::vector<std::string> pieces,
                                                                std::vector<float> scores,
                                                                std::vector<int32_t> token_types,
                                                                int32_t bos_id, int32_t eos_id,
                                                                bool add_space_prefix) {
  const size_t n = pieces.size();
  if (n == 0) return invalid_argument("sentencepiece vocabulary is empty");
  if (scores.size() != n || token_types.size() != n) {
    return invalid_argument("sentencepiece vocabulary: " + std::to_string(n) + " pieces but " +
                            std::to_string(scores.size()) + " scores and " +
                            std::to_string(token_types.size()) + " token types");
  }
  const auto in_range = [n](int32_t id) { return id >= -1 && id < static_cast<int64_t>(n); };
  if (!in_range(bos_id) || !in_range(eos_id)) {
    return invalid_argument("sentencepiece vocabulary: bos id " + std::to_string(bos_id) + " / eos id " +
                            std::to_string(eos_id) + " outside [-1, " + std::to_string(n) + ")");
  }
  std::vector<SpTokenType> types(n);
  std::array<int32_t, 256> byte_piece;  // "<0xXX>" pieces, whatever their type (as llama.cpp)
  std::array<int32_t, 256> one_byte_piece;
  byte_piece.fill(-1);
  one_byte_piece.fill(-1);
  int32_t unk_id = -1;
  for (size_t id = 0; id < n; ++id) {
    const int32_t t = token_types[id];
    if (t < 1 || t > 6) {
      return invalid_argument("sentencepiece vocabulary: token " + std::to_string(id) + " has type " +
                              std::to_string(t) + " (valid: 1..6)");
    }
    types[id] = static_cast<SpTokenType>(t);
    auto byte = parse_byte_piece(pieces[id]);
    if (types[id] == SpTokenType::kByte && !byte) {
      return invalid_argument("sentencepiece vocabulary: byte token " + std::to_string(id) + " \"" +
                              pieces[id] + "\" is not of the form <0xXX>");
    }
    if (byte) byte_piece[*byte] = static_cast<int32_t>(id);
    if (pieces[id].size() == 1) one_byte_piece[static_cast<uint8_t>(pieces[id][0])] = static_cast<int32_t>(id);
    if (types[id] == SpTokenType::kUnknown && unk_id < 0) unk_id = static_cast<int32_t>(id);
  }
  // Where a byte has no "<0xXX>" piece, llama.cpp tries the one-byte piece; we then fall back
  // to <unk> rather than fail at encode time.
  std::array<int32_t, 256> byte_token;
  for (int b = 0; b < 256; ++b) {
    byte_token[b] = byte_piece[b] >= 0 ? byte_piece[b] : one_byte_piece[b] >= 0 ? one_byte_piece[b] : unk_id;
    if (byte_token[b] < 0) {
      return invalid_argument("sentencepiece vocabulary: no token for byte " + std::to_string(b) +
                              " (no <0xXX> piece, no one-byte piece, no unknown token)");
    }
  }
  return std::unique_ptr<Tokenizer>(std::make_unique<SentencePieceTokenizer>(
      std::move(pieces), std::move(scores), std::move(types), byte_token, bos_id, eos_id, add_space_prefix));
}

}  // namespace star
