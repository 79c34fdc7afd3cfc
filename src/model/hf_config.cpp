#include "star/model/hf_config.h"

#include <algorithm>
#include <limits>

#include "json_file.h"
#include "star/model/config_validation.h"

namespace star {
namespace {

using nlohmann::json;

// Typed reads of one JSON object's keys; errors name the file and the key.
class JsonFields {
 public:
  JsonFields(const json& object, const std::string& source) : object_(object), source_(source) {}

  const json* find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  Status missing(const std::string& key) const {
    return invalid_argument(source_ + ": missing required key '" + key + "'");
  }
  Status wrong(const std::string& key, const char* wanted) const {
    return invalid_argument(source_ + ": key '" + key + "' must be " + wanted + ", got " + object_.at(key).dump());
  }

  Result<int64_t> integer(const std::string& key, std::optional<int64_t> fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback ? Result<int64_t>(*fallback) : Result<int64_t>(missing(key));
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return wrong(key, "an integer");
    if (!v->is_number_integer()) return wrong(key, "an integer");
    return v->get<int64_t>();
  }

  Result<double> number(const std::string& key, double fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) return wrong(key, "a number");
    return v->get<double>();
  }

  Result<bool> boolean(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return wrong(key, "true or false");
    return v->get<bool>();
  }

  // A token id or a list of them; empty when absent or null.
  Result<std::vector<int32_t>> token_ids(const std::string& key) const {
    const json* v = find(key);
    std::vector<int32_t> ids;
    if (v == nullptr) return ids;
    auto add = [&](const json& id) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      return true;
    };
    if (v->is_array()) {
      for (const json& id : *v) {
        if (!add(id)) return wrong(key, "a token id or a list of token ids");
      }
    } else if (!add(*v)) {
      return wrong(key, "a token id or a list of token ids");
    }
    return ids;
  }

 private:
  const json& object_;
  const std::string& source_;
};

Status check_llama_architecture(const json& config, const std::string& source) {
  auto model_type = config.find("model_type");
  if (model_type != config.end() && model_type->is_string() && *model_type == "llama") return ok_status();
  auto architectures = config.find("architectures");
  if (architectures != config.end() && architectures->is_array()) {
    for (const json& a : *architectures) {
      if (a.is_string() && a == "LlamaForCausalLM") return ok_status();
    }
  }
  std::string name;
  if (architectures != config.end() && architectures->is_array() && !architectures->empty()) {
    name = architectures->front().is_string() ? architectures->front().get<std::string>() : architectures->front().dump();
  } else if (model_type != config.end()) {
    name = model_type->is_string() ? model_type->get<std::string>() : model_type->dump();
  } else {
    return invalid_argument(source + ": missing required key 'model_type' (or 'architectures')");
  }
  return invalid_argument(source + ": architecture " + name + " is not Llama");
}

Result<RopeScaling> parse_rope_scaling(const json& config, const std::string& source) {
  RopeScaling scaling;
  auto it = config.find("rope_scaling");
  if (it == config.end() || it->is_null()) return scaling;
  if (!it->is_object()) return invalid_argument(source + ": key 'rope_scaling' must be an object or null");
  const std::string where = source + " (rope_scaling)";
  JsonFields fields(*it, where);
  const json* type = fields.find("rope_type");
  if (type == nullptr) type = fields.find("type");
  if (type == nullptr) return invalid_argument(where + ": missing required key 'rope_type'");
  if (!type->is_string()) return invalid_argument(where + ": rope_type must be a string");
  const std::string name = type->get<std::string>();
  if (name == "default") return scaling;
  if (name != "llama3") return unimplemented(source + ": rope_scaling type '" + name + "' is not supported (only llama3)");
  scaling.type = RopeScaling::Type::kLlama3;
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor"}) {
    if (fields.find(key) == nullptr) return fields.missing(key);
  }
  auto factor = fields.number("factor", 0);
  auto low = fields.number("low_freq_factor", 0);
  auto high = fields.number("high_freq_factor", 0);
  auto original = fields.integer("original_max_position_embeddings", std::nullopt);
  for (const Status* s : {&factor.status(), &low.status(), &high.status(), &original.status()}) {
    if (!s->ok()) return *s;
  }
  scaling.factor = *factor;
  scaling.low_freq_factor = *low;
  scaling.high_freq_factor = *high;
  scaling.original_max_position_embeddings = *original;
  return scaling;
}

}  // namespace

Result<LlamaConfig> parse_hf_config(const json& config, const std::string& source) {
  if (!config.is_object()) return invalid_argument(source + ": not a JSON object");
  if (Status s = check_llama_architecture(config, source); !s.ok()) return s;
  JsonFields fields(config, source);
  LlamaConfig c;
  c.rope_layout = RopeLayout::kHalf;

  struct IntField {
    const char* key;
    int64_t* target;
    std::optional<int64_t> fallback;
  };
  const IntField ints[] = {
      {"hidden_size", &c.dim, std::nullopt},
      {"intermediate_size", &c.hidden_dim, std::nullopt},
      {"num_hidden_layers", &c.n_layers, std::nullopt},
      {"num_attention_heads", &c.n_heads, std::nullopt},
      {"vocab_size", &c.vocab_size, std::nullopt},
      {"max_position_embeddings", &c.max_position_embeddings, 2048},
  };
  for (const IntField& f : ints) {
    auto v = fields.integer(f.key, f.fallback);
    if (!v.ok()) return v.status();
    *f.target = *v;
  }
  if (c.n_heads <= 0) return invalid_argument(source + ": num_attention_heads must be > 0");
  auto kv_heads = fields.integer("num_key_value_heads", c.n_heads);
  if (!kv_heads.ok()) return kv_heads.status();
  c.n_kv_heads = *kv_heads;
  if (fields.find("head_dim") == nullptr && c.dim % c.n_heads != 0) {
    return invalid_argument(source + ": hidden_size " + std::to_string(c.dim) + " is not a multiple of num_attention_heads " +
                            std::to_string(c.n_heads) + " and there is no head_dim");
  }
  auto head_dim = fields.integer("head_dim", c.dim / c.n_heads);
  if (!head_dim.ok()) return head_dim.status();
  c.head_dim = *head_dim;

  auto eps = fields.number("rms_norm_eps", 1e-6);
  auto theta = fields.number("rope_theta", 10000.0);
  auto tie = fields.boolean("tie_word_embeddings", false);
  auto scaling = parse_rope_scaling(config, source);
  for (const Status* s : {&eps.status(), &theta.status(), &tie.status(), &scaling.status()}) {
    if (!s->ok()) return *s;
  }
  c.rms_norm_eps = *eps;
  c.rope_theta = *theta;
  c.tie_word_embeddings = *tie;
  c.rope_scaling = *scaling;

  // transformers' defaults (bos 1, eos 2) apply only when the key is absent; null means none.
  auto bos = fields.token_ids("bos_token_id");
  auto eos = fields.token_ids("eos_token_id");
  if (!bos.ok()) return bos.status();
  if (!eos.ok()) return eos.status();
  if (bos->size() > 1) return invalid_argument(source + ": key 'bos_token_id' must be a single token id");
  c.bos_token_id = config.contains("bos_token_id") ? (bos->empty() ? -1 : bos->front()) : 1;
  c.eos_token_ids = config.contains("eos_token_id") ? *eos : std::vector<int32_t>{2};
  return c;
}

Status apply_generation_config(const json& generation_config, const std::string& source, LlamaConfig& config) {
  if (!generation_config.is_object()) return invalid_argument(source + ": not a JSON object");
  JsonFields fields(generation_config, source);
  auto bos = fields.token_ids("bos_token_id");
  auto eos = fields.token_ids("eos_token_id");
  if (!bos.ok()) return bos.status();
  if (!eos.ok()) return eos.status();
  if (bos->size() > 1) return invalid_argument(source + ": key 'bos_token_id' must be a single token id");
  if (config.bos_token_id < 0 && !bos->empty()) config.bos_token_id = bos->front();
  for (int32_t id : *eos) {
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(id);
    }
  }
  return ok_status();
}

nlohmann::json hf_config_json(const LlamaConfig& c, DType dtype) {
  json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = c.bos_token_id >= 0 ? json(c.bos_token_id) : json(nullptr);
  if (c.eos_token_ids.empty()) {
    j["eos_token_id"] = nullptr;
  } else if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids.front();
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.dim;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = c.hidden_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["mlp_bias"] = false;
  j["model_type"] = "llama";
  j["num_attention_heads"] = c.n_heads;
  j["num_hidden_layers"] = c.n_layers;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["pretraining_tp"] = 1;
  j["rms_norm_eps"] = c.rms_norm_eps;
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    j["rope_scaling"] = {{"factor", c.rope_scaling.factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings},
                         {"rope_type", "llama3"}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = dtype == DType::kF32 ? "float32" : dtype == DType::kF16 ? "float16" : "bfloat16";
  j["transformers_version"] = "4.44.2";
  j["use_cache"] = true;
  j["vocab_size"] = c.vocab_size;
  return j;
}

Result<LlamaConfig> load_hf_config(const std::filesystem::path& model_dir) {
  const std::filesystem::path config_path = model_dir / "config.json";
  auto config_json = read_json_file(config_path);
  if (!config_json.ok()) return config_json.status();
  auto config = parse_hf_config(*config_json, config_path.string());
  if (!config.ok()) return config.status();

  const std::filesystem::path generation_path = model_dir / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(generation_path, ec)) {
    auto generation_json = read_json_file(generation_path);
    if (!generation_json.ok()) return generation_json.status();
    if (Status s = apply_generation_config(*generation_json, generation_path.string(), *config); !s.ok()) return s;
  }
  if (Status s = validate_llama_config(*config, config_path.string()); !s.ok()) return s;
  return config;
}

}  // namespace star
