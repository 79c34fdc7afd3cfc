// Backend: the shim's gRPC connection to star-server, and what it needs to know about the model.
// The shim knows the model only through GetModelInfo; it asks once the server is serving and
// remembers the answer.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "star/http/chat_render.h"
#include "star/http/shim_metrics.h"
#include "star/tokenizer/chat_format.h"
#include "star/v1/star.grpc.pb.h"

namespace star::http {

struct ModelFacts {
  std::string id;  // the model directory's (or .gguf file's) name: what `model` must say
  ChatFormat chat_format = ChatFormat::kNone;
  ChatSpecialTokens special_tokens;
  int64_t max_positions = 0;
  int32_t bos_token_id = -1;
};

// The id of a model loaded from `source`: its last path component ("/models/tiny/" -> "tiny").
std::string model_id_from_source(const std::string& source);

class Backend {
 public:
  Backend(const std::string& address, std::string api_key);

  // A context for one call, with the backend's key; `timeout` 0: no deadline.
  std::unique_ptr<grpc::ClientContext> call(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  v1::StarService::Stub& star() { return *star_; }

  bool serving();
  // The cached facts, fetched on first success; the backend's error otherwise.
  grpc::Status model(ModelFacts& out);
  std::optional<QueueState> queue_state();
  // Tokenize RPC; the gRPC status on failure.
  grpc::Status tokenize(const std::string& text, bool add_bos, bool parse_special, std::vector<int32_t>& ids);

 private:
  std::string api_key_;
  std::unique_ptr<v1::StarService::Stub> star_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  std::mutex mutex_;
  std::optional<ModelFacts> facts_;
};

}  // namespace star::http
