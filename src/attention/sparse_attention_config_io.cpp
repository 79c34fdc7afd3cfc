#include "star/attention/sparse_attention_config_io.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace star {
namespace {

constexpr const char* kSkipSoftmaxKey = "threshold_scale_factor";

// The rocket keys and the RocketConfig field each one fills, in TensorRT-LLM's order.
struct RocketField {
  const char* key;
  int64_t RocketConfig::*member;
};

constexpr std::array<RocketField, 7> kRocketFields = {{
    {"prompt_budget", &RocketConfig::prompt_budget},
    {"window_size", &RocketConfig::window_size},
    {"kernel_size", &RocketConfig::kernel_size},
    {"topk", &RocketConfig::topk},
    {"topr", &RocketConfig::topr},
    {"page_size", &RocketConfig::page_size},
    {"token_budget", &RocketConfig::token_budget},
}};

// The keys token_budget derives per request (attention/rocket/token_budget.h).
constexpr std::array<const char*, 4> kDerivedFromTokenBudget = {"prompt_budget", "topk", "topr", "page_size"};

bool derived_from_token_budget(const std::string& key) {
  return std::find(kDerivedFromTokenBudget.begin(), kDerivedFromTokenBudget.end(), key) !=
         kDerivedFromTokenBudget.end();
}

// The reference code's smallest budget.
constexpr int64_t kMinTokenBudget = 16;

std::string field_name(const std::string& key) { return "sparse_attention." + key; }

Status field_error(const std::string& key, const std::string& what) {
  return invalid_argument(field_name(key) + ": " + what);
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Status check_scale_factor(const std::string& key, double value) {
  if (std::isfinite(value) && value >= 0.0) return ok_status();
  return field_error(key, number_text(value) + " must be a finite number >= 0 (0: that phase runs dense)");
}

Status check_at_least(const char* key, int64_t value, int64_t lo, const std::string& meaning = "") {
  if (value >= lo) return ok_status();
  return field_error(key, std::to_string(value) + " must be >= " + std::to_string(lo) + meaning);
}

bool is_rocket_key(const std::string& key) {
  for (const RocketField& f : kRocketFields) {
    if (key == f.key) return true;
  }
  return false;
}

// The error for a key the chosen algorithm does not read.
Status foreign_key(const std::string& key, const std::string& algorithm) {
  if (key == kSkipSoftmaxKey) {
    return field_error(key, "belongs to algorithm skip_softmax, not " + algorithm);
  }
  if (is_rocket_key(key)) return field_error(key, "belongs to algorithm rocket, not " + algorithm);
  return field_error(key, "unknown key (known: algorithm, threshold_scale_factor, prompt_budget, window_size, "
                          "kernel_size, topk, topr, page_size, token_budget)");
}

Result<double> scale_factor_from_json(const std::string& key, const nlohmann::json& value) {
  if (!value.is_number()) {
    return field_error(key, "must be a number, got " + std::string(value.type_name()) + " " + value.dump());
  }
  const double s = value.get<double>();
  if (Status st = check_scale_factor(key, s); !st.ok()) return st;
  return s;
}

Status skip_softmax_from_json(const nlohmann::json& value, SkipSoftmaxConfig& out) {
  if (value.is_number()) {
    Result<double> s = scale_factor_from_json(kSkipSoftmaxKey, value);
    if (!s.ok()) return s.status();
    out.prefill_scale_factor = *s;
    out.decode_scale_factor = *s;
    return ok_status();
  }
  if (!value.is_object()) {
    return field_error(kSkipSoftmaxKey, "must be a number or {\"prefill\": S, \"decode\": S}, got " +
                                            std::string(value.type_name()) + " " + value.dump());
  }
  for (const auto& [phase, s] : value.items()) {
    const std::string key = std::string(kSkipSoftmaxKey) + "." + phase;
    double* target = phase == "prefill" ? &out.prefill_scale_factor
                     : phase == "decode" ? &out.decode_scale_factor
                                         : nullptr;
    if (target == nullptr) return field_error(key, "is not a phase (prefill, decode)");
    Result<double> parsed = scale_factor_from_json(key, s);
    if (!parsed.ok()) return parsed.status();
    *target = *parsed;
  }
  return ok_status();
}

Status rocket_from_json(const std::string& key, const nlohmann::json& value, RocketConfig& out) {
  for (const RocketField& f : kRocketFields) {
    if (key != f.key) continue;
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() &&
         value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      return field_error(key, "must be an integer, got " + std::string(value.type_name()) + " " + value.dump());
    }
    out.*f.member = value.get<int64_t>();
  }
  return ok_status();
}

}  // namespace

Status validate_sparse_attention_config(const SparseAttentionConfig& c) {
  if (c.algorithm != "none" && c.algorithm != "skip_softmax" && c.algorithm != "rocket") {
    return field_error("algorithm", "\"" + c.algorithm + "\" is not one of {none, skip_softmax, rocket}");
  }
  const std::string prefill = std::string(kSkipSoftmaxKey) + ".prefill";
  const std::string decode = std::string(kSkipSoftmaxKey) + ".decode";
  const RocketConfig& r = c.rocket;
  for (Status s : {
           check_scale_factor(prefill, c.skip_softmax.prefill_scale_factor),
           check_scale_factor(decode, c.skip_softmax.decode_scale_factor),
           check_at_least("window_size", r.window_size, 1),
           check_at_least("token_budget", r.token_budget, 0, " (0: prompt_budget, topk, topr and page_size as given)"),
           r.token_budget > 0 ? ok_status()
                              : check_at_least("prompt_budget", r.prompt_budget, r.window_size + 1,
                                               " (prompt_budget > window_size = " + std::to_string(r.window_size) + ")"),
           check_at_least("kernel_size", r.kernel_size, 1),
           check_at_least("topk", r.topk, 1),
           check_at_least("topr", r.topr, 1),
           check_at_least("page_size", r.page_size, 1),
       }) {
    if (!s.ok()) return s;
  }
  if (r.kernel_size % 2 == 0) {
    return field_error("kernel_size", std::to_string(r.kernel_size) + " must be odd (a centred max-pool)");
  }
  if ((r.page_size & (r.page_size - 1)) != 0) {
    return field_error("page_size", std::to_string(r.page_size) + " must be a power of two");
  }
  if (r.token_budget > 0 && r.token_budget < kMinTokenBudget) {
    return field_error("token_budget", std::to_string(r.token_budget) + " must be 0 or >= " +
                                           std::to_string(kMinTokenBudget));
  }
  return ok_status();
}

Result<SparseAttentionConfig> sparse_attention_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) {
    return invalid_argument(std::string("sparse_attention: must be a JSON object, got ") +
                            json.type_name() + " " + json.dump());
  }
  SparseAttentionConfig config;
  if (const auto a = json.find("algorithm"); a != json.end()) {
    if (!a->is_string()) {
      return field_error("algorithm", "must be a string, got " + std::string(a->type_name()) + " " + a->dump());
    }
    config.algorithm = a->get<std::string>();
  }
  if (Status s = validate_sparse_attention_config(config); !s.ok()) return s;
  for (const auto& [key, value] : json.items()) {
    if (key == "algorithm") continue;
    if (config.algorithm == "skip_softmax" && key == kSkipSoftmaxKey) {
      if (Status s = skip_softmax_from_json(value, config.skip_softmax); !s.ok()) return s;
    } else if (config.algorithm == "rocket" && is_rocket_key(key)) {
      if (Status s = rocket_from_json(key, value, config.rocket); !s.ok()) return s;
    } else {
      return foreign_key(key, config.algorithm);
    }
  }
  if (config.rocket.token_budget > 0) {
    for (const char* key : kDerivedFromTokenBudget) {
      if (json.contains(key)) return field_error(key, "not with token_budget, which derives it for each request");
    }
  }
  if (Status s = validate_sparse_attention_config(config); !s.ok()) return s;
  return config;
}

nlohmann::json sparse_attention_config_to_json(const SparseAttentionConfig& config) {
  nlohmann::json json = {{"algorithm", config.algorithm}};
  if (config.algorithm == "skip_softmax") {
    const SkipSoftmaxConfig& s = config.skip_softmax;
    if (s.prefill_scale_factor == s.decode_scale_factor) {
      json[kSkipSoftmaxKey] = s.prefill_scale_factor;
    } else {
      json[kSkipSoftmaxKey] = {{"prefill", s.prefill_scale_factor}, {"decode", s.decode_scale_factor}};
    }
  } else if (config.algorithm == "rocket") {
    const bool budgeted = config.rocket.token_budget > 0;
    for (const RocketField& f : kRocketFields) {
      const bool given = budgeted ? !derived_from_token_budget(f.key) : std::string(f.key) != "token_budget";
      if (given) json[f.key] = config.rocket.*f.member;
    }
  }
  return json;
}

}  // namespace star
