// GenerationCall: one Generate stream from the backend, read event by event and timed for the
// metrics. Dropping an unfinished call cancels it on the backend (the ranks stop at the next
// token), which is how a client that goes away frees the server.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "star/http/backend.h"
#include "star/http/shim_metrics.h"
#include "star/v1/star.grpc.pb.h"

namespace star::http {

class GenerationCall {
 public:
  using Clock = std::chrono::steady_clock;

  // `arrived`: when the HTTP request came in, the start of every latency the metrics report;
  // `client`: the HTTP client's address (Backend::call).
  GenerationCall(Backend& backend, const v1::GenerateRequest& request, Clock::time_point arrived,
                 const std::string& client);
  ~GenerationCall();
  GenerationCall(const GenerationCall&) = delete;
  GenerationCall& operator=(const GenerationCall&) = delete;

  // The next event; false at the end of the stream (then finish()).
  bool next(v1::GenerateResponse& response);
  grpc::Status finish();
  // Stops the generation on the backend; next() then returns false soon.
  void cancel() { context_->TryCancel(); }

  const std::optional<v1::GenerateDone>& done() const { return done_; }
  // Meaningful once done() is set.
  RequestObservation observation() const;

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader_;
  bool finished_ = false;
  Clock::time_point arrived_;
  std::optional<Clock::time_point> last_token_;
  std::optional<double> time_to_first_token_;
  std::vector<double> inter_token_latencies_;
  std::optional<v1::GenerateDone> done_;
  double e2e_seconds_ = 0;
};

}  // namespace star::http
