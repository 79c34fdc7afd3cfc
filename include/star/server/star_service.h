// StarService: the star.v1 handlers on rank 0, run by gRPC's thread pool. Each handler checks the
// caller's key and the request, then either answers from rank 0 alone (tokenizer, model facts,
// the context book) or queues a job for the engine thread and streams what its channel reports.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <grpcpp/grpcpp.h>

#include "star/engine/runtime_model.h"
#include "star/server/client_address.h"
#include "star/server/client_streams.h"
#include "star/server/context_registry.h"
#include "star/server/request_channel.h"
#include "star/server/request_parsing.h"
#include "star/server/server_options.h"
#include "star/server/work_queue.h"
#include "star/v1/star.grpc.pb.h"

namespace star::server {

class StarService final : public v1::StarService::Service {
 public:
  // proxies: options.forwarded_allow_ips, parsed (trusted_proxies).
  StarService(const ServerOptions& options, TrustedProxies proxies, int ranks, WorkQueue& queue,
              ContextRegistry& contexts);

  // The model is loaded on every rank: requests are served from now on (UNAVAILABLE before).
  void start_serving(const RuntimeModel& model);
  // Requests are refused from now on (UNAVAILABLE); accepted ones that have not ended by
  // `deadline` are cancelled.
  void stop_serving(std::chrono::steady_clock::time_point deadline);
  // The ranks can no longer serve (a worker rank was lost): every request, queued, running or
  // new, ends with UNAVAILABLE and `why`.
  void fail(const std::string& why);
  // Waits until no request handler is left running, or `timeout` passed; true when none is left.
  bool wait_idle(std::chrono::milliseconds timeout) const;

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status CreateContext(grpc::ServerContext* context, const v1::CreateContextRequest* request,
                             grpc::ServerWriter<v1::CreateContextResponse>* writer) override;
  grpc::Status DeleteContext(grpc::ServerContext* context, const v1::DeleteContextRequest* request,
                             v1::DeleteContextResponse* response) override;
  grpc::Status ListContexts(grpc::ServerContext* context, const v1::ListContextsRequest* request,
                            v1::ListContextsResponse* response) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status Detokenize(grpc::ServerContext* context, const v1::DetokenizeRequest* request,
                          v1::DetokenizeResponse* response) override;
  grpc::Status GetModelInfo(grpc::ServerContext* context, const v1::GetModelInfoRequest* request,
                            v1::ModelInfo* response) override;
  grpc::Status GetServerInfo(grpc::ServerContext* context, const v1::GetServerInfoRequest* request,
                             v1::ServerInfo* response) override;
  grpc::Status Abort(grpc::ServerContext* context, const v1::AbortRequest* request,
                     v1::AbortResponse* response) override;

 private:
  enum class State { kLoading, kServing, kStopping, kFailed };

  // UNAUTHENTICATED or UNAVAILABLE when the call may not proceed.
  grpc::Status admit_call(const grpc::ServerContext& context) const;
  RequestDefaults defaults() const;
  // Queues the job and relays its channel to `emit` until the job ends, or until it is cancelled
  // and nobody is left to read the rest. `emit` returns false when the client cannot be written to.
  template <typename Emit>
  grpc::Status run_job(grpc::ServerContext& context, const std::shared_ptr<Job>& job, Emit emit);
  // The request's id for Abort: `requested_id`, or a fresh one when empty. ALREADY_EXISTS in
  // `error` when another active request has it.
  std::string register_request(const std::string& requested_id, const std::shared_ptr<RequestChannel>& channel,
                               grpc::Status& error);
  void unregister_request(const std::string& id);
  bool shutdown_deadline_passed() const;
  grpc::Status failed_status() const;

  const ServerOptions options_;
  const TrustedProxies proxies_;
  const int ranks_;
  WorkQueue& queue_;
  ContextRegistry& contexts_;
  ClientStreams streams_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  std::atomic<State> state_{State::kLoading};
  std::atomic<const RuntimeModel*> model_{nullptr};
  std::atomic<std::chrono::steady_clock::rep> shutdown_deadline_{0};
  std::atomic<int32_t> active_{0};    // jobs queued or running
  std::atomic<int64_t> finished_{0};  // jobs that ended
  mutable std::mutex failure_mutex_;
  std::string failure_;  // why the ranks can no longer serve (State::kFailed)

  std::mutex requests_mutex_;
  std::unordered_map<std::string, std::shared_ptr<RequestChannel>> requests_;  // Generate calls, by request_id
  uint64_t next_request_ = 0;
};

}  // namespace star::server
