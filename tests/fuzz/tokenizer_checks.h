// Shared by the tokenizer fuzz targets: how an input selects a tokenizer and options, and the
// properties every tokenizer must keep whatever the vocabulary.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "star/tokenizer/streaming_decoder.h"
#include "star/tokenizer/tokenizer.h"

namespace star::fuzz {

// Well-formed UTF-8 by the Unicode standard (Table 3-7): no overlongs, surrogates or code points
// past U+10FFFF. Written here, apart from the tokenizer's own UTF-8 code, to check it.
inline bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 < 0x80) {
      ++i;
      continue;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 2;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 3;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n + 1 > s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (b < min || b > max) return false;
    }
    i += n + 1;
  }
  return true;
}

// The first input byte chooses what runs; the rest is the text, or the ids to decode.
struct TokenizerInput {
  size_t tokenizer = 0;  // index into the target's tokenizers
  EncodeOptions options;
  bool decode_ids = false;  // the rest is ids to decode instead of text to encode
  std::string_view rest;
};

inline TokenizerInput split_tokenizer_input(const uint8_t* data, size_t size, size_t tokenizer_count) {
  TokenizerInput in;
  if (size == 0) return in;
  const uint8_t selector = data[0];
  in.tokenizer = (selector & 0x07) % tokenizer_count;
  in.options.add_bos = (selector & 0x08) != 0;
  in.options.parse_special = (selector & 0x10) != 0;
  in.decode_ids = (selector & 0x20) != 0;
  in.rest = std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1);
  return in;
}

// Two bytes per id, spread over [-4, vocab + 4) so that ids outside the vocabulary occur too.
inline std::vector<int32_t> ids_from_bytes(std::string_view bytes, int64_t vocab_size) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    uint16_t v = 0;
    std::memcpy(&v, bytes.data() + i, 2);
    ids.push_back(static_cast<int32_t>(v % (vocab_size + 8)) - 4);
  }
  return ids;
}

inline void check_ids_in_vocabulary(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    STAR_FUZZ_CHECK(id >= 0 && id < tokenizer.vocab_size(), "encode gave id " + std::to_string(id));
  }
}

// Every piece a StreamingDecoder emits is valid UTF-8, and the pieces plus flush() equal the
// one-shot decode; returns that decode.
inline std::string check_streaming_decode(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                          bool skip_special) {
  StreamingDecoder decoder(tokenizer, skip_special);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = decoder.push(id);
    STAR_FUZZ_CHECK(is_valid_utf8(piece), "push(" + std::to_string(id) + ") emitted invalid UTF-8");
    streamed += piece;
  }
  const std::string tail = decoder.flush();
  STAR_FUZZ_CHECK(is_valid_utf8(tail), "flush() emitted invalid UTF-8");
  streamed += tail;
  const std::string whole = tokenizer.decode(ids, skip_special);
  STAR_FUZZ_CHECK(streamed == whole, "streamed '" + streamed + "' but decode gave '" + whole + "'");
  return whole;
}

// Ids mode: arbitrary ids, in and out of the vocabulary, through both decoders.
inline void check_decode_ids(const Tokenizer& tokenizer, std::string_view bytes) {
  const std::vector<int32_t> ids = ids_from_bytes(bytes, tokenizer.vocab_size());
  check_streaming_decode(tokenizer, ids, /*skip_special=*/true);
  check_streaming_decode(tokenizer, ids, /*skip_special=*/false);
}

// Text mode's encoding and both of its decodes, after the checks every tokenizer passes.
struct CheckedEncoding {
  std::vector<int32_t> ids;
  bool has_bos = false;
  std::string text;          // decoded, specials skipped
  std::string with_special;  // decoded, specials kept
};

// The input's mode: in ids mode the ids are decoded and checked (nullopt); in text mode the text
// is encoded, the ids are in the vocabulary, BOS comes first when asked for, and both decodes
// stream as they decode whole.
inline std::optional<CheckedEncoding> check_input(const Tokenizer& tokenizer, const TokenizerInput& in) {
  if (in.decode_ids) {
    check_decode_ids(tokenizer, in.rest);
    return std::nullopt;
  }
  CheckedEncoding e;
  e.ids = tokenizer.encode(in.rest, in.options);
  check_ids_in_vocabulary(tokenizer, e.ids);
  e.has_bos = in.options.add_bos && tokenizer.bos_id() >= 0;
  if (e.has_bos) STAR_FUZZ_CHECK(!e.ids.empty() && e.ids.front() == tokenizer.bos_id(), "BOS is not first");
  e.text = check_streaming_decode(tokenizer, e.ids, /*skip_special=*/true);
  e.with_special = check_streaming_decode(tokenizer, e.ids, /*skip_special=*/false);
  return e;
}

}  // namespace star::fuzz
