// Backend: the shim's gRPC connection to star-server, and what it needs to know about the model.
// The shim knows the model only through GetModelInfo. It remembers the answer until the backend
// goes away or restarts (another model may come back on the same address), which a monitor thread
// notices by asking GetServerInfo twice a second; /health answers from what the monitor saw last.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "star/common/status.h"
#include "star/tokenizer/chat_render.h"
#include "star/http/shim_metrics.h"
#include "star/http/shim_options.h"
#include "star/tokenizer/chat_format.h"
#include "star/v1/star.grpc.pb.h"

namespace star::http {

struct ModelFacts {
  std::string id;  // the model directory's (or .gguf file's) name: what `model` must say
  ChatFormat chat_format = ChatFormat::kNone;
  ChatSpecialTokens special_tokens;
  int64_t max_positions = 0;
  int32_t bos_token_id = -1;
  int64_t max_tokens_limit = 0;  // the server's --max-tokens-limit; 0: a server too old to say
};

// The id of a model loaded from `source`: its last path component ("/models/tiny/" -> "tiny").
std::string model_id_from_source(const std::string& source);

// What the backend answered to the monitor's last GetServerInfo.
struct BackendHealth {
  grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE;
  std::string message = "not asked yet";
  bool ok() const { return code == grpc::StatusCode::OK; }
};

class Backend {
 public:
  // Fails (naming the option) when --backend-tls-ca cannot be read.
  static Result<std::unique_ptr<Backend>> connect(const ShimOptions& options);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // A context for one call, with the backend's key; `timeout` 0: no deadline. `client`: the HTTP
  // client's address, sent as x-forwarded-for so that star-server counts the call's stream for that
  // client rather than for this shim (its --forwarded-allow-ips lists the shim); empty: none.
  std::unique_ptr<grpc::ClientContext> call(std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                            const std::string& client = "") const;
  v1::StarService::Stub& star() { return *star_; }

  BackendHealth health() const;
  // The cached facts, fetched again after the backend went away; the backend's error otherwise.
  grpc::Status model(ModelFacts& out);
  // A call failed: when the backend is gone, the next model() asks again.
  void observe_failure(const grpc::Status& status);
  std::optional<QueueState> queue_state();
  // The tokens of a stored context, or nullopt when the backend does not list it.
  std::optional<int64_t> context_tokens(const std::string& context_id);
  // Tokenize RPC; the gRPC status on failure.
  grpc::Status tokenize(const std::string& text, bool add_bos, bool parse_special, std::vector<int32_t>& ids);

 private:
  Backend(std::shared_ptr<grpc::Channel> channel, std::string api_key);
  void monitor();

  std::string api_key_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::StarService::Stub> star_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<ModelFacts> facts_;
  BackendHealth health_;
  std::optional<double> uptime_seconds_;  // the last answer's: a smaller one means a restart
  std::thread monitor_;
};

}  // namespace star::http
