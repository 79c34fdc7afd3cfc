#include "star/server/engine_command.h"

#include <algorithm>
#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "star/attention/attention_config_io.h"
#include "star/dist/broadcast_string.h"

namespace star::server {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<EngineCommand::Op, const char*>, 4> kOps = {{
    {EngineCommand::Op::kGenerate, "generate"},
    {EngineCommand::Op::kCreateContext, "create_context"},
    {EngineCommand::Op::kRelease, "release"},
    {EngineCommand::Op::kShutdown, "shutdown"},
}};

json generation_to_json(const GenerationOptions& g) {
  return {{"temperature", g.sampling.temperature},
          {"top_k", g.sampling.top_k},
          {"top_p", g.sampling.top_p},
          {"seed", g.sampling.seed},
          {"max_tokens", g.max_tokens},
          {"stop_strings", g.stop_strings},
          {"stop_token_ids", g.stop_token_ids},
          {"ignore_eos", g.ignore_eos}};
}

GenerationOptions generation_from_json(const json& j) {
  GenerationOptions g;
  g.sampling.temperature = j.at("temperature").get<float>();
  g.sampling.top_k = j.at("top_k").get<int32_t>();
  g.sampling.top_p = j.at("top_p").get<float>();
  g.sampling.seed = j.at("seed").get<uint64_t>();
  g.max_tokens = j.at("max_tokens").get<int64_t>();
  g.stop_strings = j.at("stop_strings").get<std::vector<std::string>>();
  g.stop_token_ids = j.at("stop_token_ids").get<std::vector<int32_t>>();
  g.ignore_eos = j.at("ignore_eos").get<bool>();
  return g;
}

}  // namespace

std::string encode_command(const EngineCommand& c) {
  json j;
  for (const auto& [op, name] : kOps) {
    if (op == c.op) j["op"] = name;
  }
  j["release"] = c.release;
  switch (c.op) {
    case EngineCommand::Op::kGenerate:
      if (c.context_id.empty()) {
        j["context_ids"] = c.context_ids;
        j["attention"] = attention_config_to_json(c.attention);
      } else {
        j["context_id"] = c.context_id;
      }
      j["query_ids"] = c.query_ids;
      j["generation"] = generation_to_json(c.generation);
      break;
    case EngineCommand::Op::kCreateContext:
      j["context_id"] = c.context_id;
      j["context_ids"] = c.context_ids;
      j["attention"] = attention_config_to_json(c.attention);
      j["reserve_tokens"] = c.reserve_tokens;
      break;
    case EngineCommand::Op::kRelease:
    case EngineCommand::Op::kShutdown:
      break;
  }
  return j.dump();
}

Result<EngineCommand> decode_command(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return internal_error("engine command: not a JSON object");
  EngineCommand c;
  try {
    const std::string op = j.at("op").get<std::string>();
    auto it = std::find_if(kOps.begin(), kOps.end(), [&](const auto& entry) { return op == entry.second; });
    if (it == kOps.end()) return internal_error("engine command: unknown op '" + op + "'");
    c.op = it->first;
    c.release = j.at("release").get<std::vector<std::string>>();
    c.context_id = j.value("context_id", "");
    c.context_ids = j.value("context_ids", std::vector<int32_t>{});
    c.query_ids = j.value("query_ids", std::vector<int32_t>{});
    c.reserve_tokens = j.value("reserve_tokens", int64_t{0});
    if (j.contains("generation")) c.generation = generation_from_json(j["generation"]);
  } catch (const json::exception& e) {
    return internal_error(std::string("engine command: ") + e.what());
  }
  if (j.contains("attention")) {
    Result<AttentionConfig> attention = attention_config_from_json(j["attention"]);
    if (!attention.ok()) return internal_error("engine command: " + attention.status().message());
    c.attention = *attention;
  }
  return c;
}

Status send_command(Communicator& comm, const EngineCommand& command) {
  std::string text = encode_command(command);
  return broadcast_string(comm, text, 0);
}

Result<EngineCommand> receive_command(Communicator& comm) {
  std::string text;
  if (Status s = broadcast_string(comm, text, 0); !s.ok()) return s;
  return decode_command(text);
}

std::string encode_decision(const AdmitDecision& d) {
  return json{{"keep", d.keep}, {"release", d.release}}.dump();
}

Result<AdmitDecision> decode_decision(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  AdmitDecision d;
  try {
    d.keep = j.at("keep").get<bool>();
    d.release = j.at("release").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return internal_error(std::string("context decision: ") + e.what());
  }
  return d;
}

}  // namespace star::server
