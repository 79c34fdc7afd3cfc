#include "star/model/synthetic_tokenizer.h"

#include <array>
#include <map>
#include <memory>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace star {
namespace {

// Llama 3's pre-tokenizer pattern (docs/algorithms.md); it needs Unicode classes and a lookahead.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::array<const char*, 5> kSpecialTokens = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};

// Llama 3's template: BOS once, then a header, the trimmed content and <|eot_id|> per message.
constexpr const char* kChatTemplate =
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

std::string utf8(uint32_t code_point) {
  std::string s;
  if (code_point < 0x80) {
    s += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    s += static_cast<char>(0xc0 | (code_point >> 6));
    s += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    s += static_cast<char>(0xe0 | (code_point >> 12));
    s += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (code_point & 0x3f));
  }
  return s;
}

// The pieces of `text` that the Llama 3 regex splits it into (matches and any gaps between them,
// as HF's Split with behavior "Isolated" keeps both).
Result<std::vector<std::string>> llama3_pre_tokenize(std::string_view text) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kLlama3Pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                    &error, &error_offset, nullptr),
      &pcre2_code_free);
  if (!code) return internal_error("the Llama 3 pre-tokenizer regex does not compile (PCRE2 error " + std::to_string(error) + ")");
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), &pcre2_match_data_free);

  std::vector<std::string> pieces;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    int rc = pcre2_match(code.get(), subject, text.size(), offset, 0, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return invalid_argument("pre-tokenizing the corpus failed (PCRE2 error " + std::to_string(rc) + ")");
    const PCRE2_SIZE* range = pcre2_get_ovector_pointer(match.get());
    if (range[0] > offset) pieces.emplace_back(text.substr(offset, range[0] - offset));
    if (range[1] == range[0]) {  // every alternative consumes a character; guard against a stall anyway
      offset = range[1] + 1;
      continue;
    }
    pieces.emplace_back(text.substr(range[0], range[1] - range[0]));
    offset = range[1];
  }
  if (offset < text.size()) pieces.emplace_back(text.substr(offset));
  return pieces;
}

}  // namespace

std::string byte_level_symbol(uint8_t byte) {
  // Printable Latin-1 bytes keep their code point; the other 68 map, in order, to U+0100 onwards.
  auto printable = [](uint32_t b) { return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff); };
  if (printable(byte)) return utf8(byte);
  uint32_t rank = 0;
  for (uint32_t b = 0; b < byte; ++b) {
    if (!printable(b)) ++rank;
  }
  return utf8(256 + rank);
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += byte_level_symbol(static_cast<uint8_t>(c));
  return out;
}

Result<ByteLevelBpe> train_byte_level_bpe(std::string_view corpus, int max_merges) {
  auto pieces = llama3_pre_tokenize(corpus);
  if (!pieces.ok()) return pieces.status();
  std::map<std::string, int64_t> word_counts;
  for (const std::string& piece : *pieces) ++word_counts[piece];

  ByteLevelBpe bpe;
  std::map<std::string, int32_t> token_ids;
  for (int b = 0; b < 256; ++b) {
    bpe.vocab.emplace_back(1, static_cast<char>(b));
    token_ids.emplace(bpe.vocab.back(), b);
  }
  struct Word {
    std::vector<int32_t> symbols;
    int64_t count;
  };
  std::vector<Word> words;
  for (const auto& [text, count] : word_counts) {
    Word w{{}, count};
    for (char c : text) w.symbols.push_back(static_cast<uint8_t>(c));
    words.push_back(std::move(w));
  }

  for (int m = 0; m < max_merges; ++m) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pair_counts;
    for (const Word& w : words) {
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i) pair_counts[{w.symbols[i], w.symbols[i + 1]}] += w.count;
    }
    const std::pair<int32_t, int32_t>* best = nullptr;
    int64_t best_count = 0;
    for (const auto& [pair, count] : pair_counts) {
      bool better = count > best_count ||
                    (count == best_count && std::tie(bpe.vocab[pair.first], bpe.vocab[pair.second]) <
                                                std::tie(bpe.vocab[best->first], bpe.vocab[best->second]));
      if (better) {
        best = &pair;
        best_count = count;
      }
    }
    if (best == nullptr || best_count < 2) break;
    const auto [left, right] = *best;
    const std::string merged = bpe.vocab[left] + bpe.vocab[right];
    auto [it, inserted] = token_ids.emplace(merged, static_cast<int32_t>(bpe.vocab.size()));
    if (inserted) bpe.vocab.push_back(merged);
    bpe.merges.emplace_back(left, right);
    for (Word& w : words) {
      std::vector<int32_t> out;
      out.reserve(w.symbols.size());
      for (size_t i = 0; i < w.symbols.size(); ++i) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == left && w.symbols[i + 1] == right) {
          out.push_back(it->second);
          ++i;
        } else {
          out.push_back(w.symbols[i]);
        }
      }
      w.symbols = std::move(out);
    }
  }
  return bpe;
}

Result<SyntheticTokenizer> make_synthetic_tokenizer(int64_t model_max_length) {
  auto bpe = train_byte_level_bpe(synthetic_tokenizer_corpus(), kSyntheticMerges);
  if (!bpe.ok()) return bpe.status();
  using ojson = nlohmann::ordered_json;
  SyntheticTokenizer t;
  const auto first_special = static_cast<int32_t>(bpe->vocab.size());
  t.size = first_special + static_cast<int32_t>(kSpecialTokens.size());
  t.begin_of_text_id = first_special;
  t.end_of_text_id = first_special + 1;
  t.eot_id = first_special + 4;

  ojson vocab = ojson::object();
  for (size_t id = 0; id < bpe->vocab.size(); ++id) vocab[byte_level_encode(bpe->vocab[id])] = id;
  ojson merges = ojson::array();
  for (const auto& [left, right] : bpe->merges) {
    merges.push_back(byte_level_encode(bpe->vocab[left]) + " " + byte_level_encode(bpe->vocab[right]));
  }
  ojson added_tokens = ojson::array();
  ojson added_tokens_decoder = ojson::object();
  for (size_t i = 0; i < kSpecialTokens.size(); ++i) {
    const int32_t id = first_special + static_cast<int32_t>(i);
    added_tokens.push_back({{"id", id}, {"content", kSpecialTokens[i]}, {"single_word", false}, {"lstrip", false},
                            {"rstrip", false}, {"normalized", false}, {"special", true}});
    added_tokens_decoder[std::to_string(id)] = {{"content", kSpecialTokens[i]}, {"lstrip", false}, {"normalized", false},
                                                {"rstrip", false}, {"single_word", false}, {"special", true}};
  }
  const std::string bos = kSpecialTokens[0];
  const ojson bos_piece = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};

  ojson& j = t.tokenizer_json;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added_tokens;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
        {{"type", "TemplateProcessing"},
         {"single", {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
         {"pair",
          {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
           {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
         {"special_tokens", {{bos, {{"id", bos}, {"ids", {first_special}}, {"tokens", {bos}}}}}}}}}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", true},
                {"vocab", vocab},
                {"merges", merges}};

  ojson& c = t.tokenizer_config;
  c["added_tokens_decoder"] = added_tokens_decoder;
  c["bos_token"] = bos;
  c["chat_template"] = kChatTemplate;
  c["clean_up_tokenization_spaces"] = true;
  c["eos_token"] = kSpecialTokens[4];
  c["model_input_names"] = {"input_ids", "attention_mask"};
  c["model_max_length"] = model_max_length;
  c["tokenizer_class"] = "PreTrainedTokenizerFast";
  return t;
}

}  // namespace star
