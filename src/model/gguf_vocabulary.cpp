#include "star/model/gguf_vocabulary.h"

#include <limits>

#include "star/model/gguf.h"

namespace star {
namespace {

Status missing_key(const GgufFile& gguf, std::string_view key) {
  return invalid_argument(gguf.path().string() + ": missing required metadata key '" + std::string(key) + "'");
}

template <typename T>
Result<T> required(const GgufFile& gguf, const Result<T>& value, std::string_view key) {
  if (value.ok() || value.status().code() != StatusCode::kNotFound) return value;
  return missing_key(gguf, key);
}

Result<int32_t> token_id(const GgufFile& gguf, std::string_view key, size_t n_tokens) {
  if (!gguf.has(key)) return -1;
  auto id = gguf.get_int(key);
  if (!id.ok()) return id.status();
  if (*id < 0 || static_cast<uint64_t>(*id) >= n_tokens) {
    return invalid_argument(gguf.path().string() + ": metadata key '" + std::string(key) + "' = " +
                            std::to_string(*id) + " is outside the vocabulary of " + std::to_string(n_tokens));
  }
  return static_cast<int32_t>(*id);
}

Status read_per_token_arrays(const GgufFile& gguf, GgufVocabulary& v) {
  const std::string where = gguf.path().string();
  const size_t n = v.tokens.size();
  if (gguf.has("tokenizer.ggml.scores")) {
    auto scores = gguf.get_float_array("tokenizer.ggml.scores");
    if (!scores.ok()) return scores.status();
    if (scores->size() != n) {
      return invalid_argument(where + ": tokenizer.ggml.scores has " + std::to_string(scores->size()) +
                              " entries for " + std::to_string(n) + " tokens");
    }
    v.scores.assign(scores->begin(), scores->end());
  }
  if (gguf.has("tokenizer.ggml.token_type")) {
    auto types = gguf.get_int_array("tokenizer.ggml.token_type");
    if (!types.ok()) return types.status();
    if (types->size() != n) {
      return invalid_argument(where + ": tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                              " entries for " + std::to_string(n) + " tokens");
    }
    for (int64_t t : *types) {
      if (t < std::numeric_limits<int32_t>::min() || t > std::numeric_limits<int32_t>::max()) {
        return invalid_argument(where + ": tokenizer.ggml.token_type has the value " + std::to_string(t));
      }
      v.token_types.push_back(static_cast<int32_t>(t));
    }
  }
  if (gguf.has("tokenizer.ggml.merges")) {
    auto merges = gguf.get_string_array("tokenizer.ggml.merges");
    if (!merges.ok()) return merges.status();
    v.merges = std::move(merges).value();
  }
  return ok_status();
}

Status read_special_ids(const GgufFile& gguf, GgufVocabulary& v) {
  const size_t n = v.tokens.size();
  struct IdKey {
    const char* key;
    int32_t* target;
  };
  for (const IdKey& k : {IdKey{"tokenizer.ggml.bos_token_id", &v.bos_id}, IdKey{"tokenizer.ggml.eos_token_id", &v.eos_id},
                         IdKey{"tokenizer.ggml.eot_token_id", &v.eot_id}}) {
    auto id = token_id(gguf, k.key, n);
    if (!id.ok()) return id.status();
    *k.target = *id;
  }
  if (gguf.has("tokenizer.ggml.add_bos_token")) {
    auto add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token");
    if (!add_bos.ok()) return add_bos.status();
    v.add_bos = *add_bos;
  }
  v.add_space_prefix = v.model == "llama";
  if (gguf.has("tokenizer.ggml.add_space_prefix")) {
    auto prefix = gguf.get_bool("tokenizer.ggml.add_space_prefix");
    if (!prefix.ok()) return prefix.status();
    v.add_space_prefix = *prefix;
  }
  return ok_status();
}

}  // namespace

Result<GgufVocabulary> read_gguf_vocabulary(const GgufFile& gguf) {
  GgufVocabulary v;
  auto model = required(gguf, gguf.get_string("tokenizer.ggml.model"), "tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  v.model = *model;
  if (gguf.has("tokenizer.ggml.pre")) {
    auto pre = gguf.get_string("tokenizer.ggml.pre");
    if (!pre.ok()) return pre.status();
    v.pre = *pre;
  }
  auto tokens = required(gguf, gguf.get_string_array("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens");
  if (!tokens.ok()) return tokens.status();
  v.tokens = std::move(tokens).value();
  if (v.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument(gguf.path().string() + ": tokenizer.ggml.tokens has too many entries");
  }
  if (Status s = read_per_token_arrays(gguf, v); !s.ok()) return s;
  if (Status s = read_special_ids(gguf, v); !s.ok()) return s;
  if (gguf.has("tokenizer.chat_template")) {
    auto chat_template = gguf.get_string("tokenizer.chat_template");
    if (!chat_template.ok()) return chat_template.status();
    v.chat_template = *chat_template;
  }
  return v;
}

Result<GgufVocabulary> read_gguf_vocabulary(const std::filesystem::path& path) {
  auto gguf = GgufFile::open(path);
  if (!gguf.ok()) return gguf.status();
  return read_gguf_vocabulary(*gguf);
}

}  // namespace star
