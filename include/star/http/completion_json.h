// The response bodies of /v1/chat/completions ("chat.completion", "chat.completion.chunk") and
// /v1/completions ("text_completion"), whole and as stream chunks. One CompletionJson per request:
// every chunk carries its id, created time and model.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "star/http/openai_request.h"
#include "star/v1/star.pb.h"

namespace star::http {

// "stop", "length", or "abort" (a cancelled generation; vLLM's name for it).
const char* openai_finish_reason(v1::FinishReason reason);
nlohmann::json usage_json(const v1::Usage& usage);

class CompletionJson {
 public:
  CompletionJson(Endpoint endpoint, std::string model, bool include_usage);

  const std::string& id() const { return id_; }
  Endpoint endpoint() const { return endpoint_; }
  bool include_usage() const { return include_usage_; }

  nlohmann::json whole(const std::string& text, const v1::GenerateDone& done) const;
  // The first chat chunk carries the role and no text.
  nlohmann::json role_chunk() const;
  nlohmann::json text_chunk(const std::string& text) const;
  nlohmann::json finish_chunk(v1::FinishReason reason) const;
  // stream_options.include_usage: the chunk after the last, with no choices.
  nlohmann::json usage_chunk(const v1::Usage& usage) const;

 private:
  nlohmann::json chunk(nlohmann::json choice) const;

  Endpoint endpoint_;
  std::string model_;
  bool include_usage_;
  std::string id_;
  int64_t created_;
};

}  // namespace star::http
