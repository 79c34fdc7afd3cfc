#include "star/http/generation_call.h"

namespace star::http {

namespace {

double seconds(GenerationCall::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

GenerationCall::GenerationCall(Backend& backend, const v1::GenerateRequest& request, Clock::time_point arrived,
                               const std::string& client)
    : context_(backend.call(std::chrono::milliseconds(0), client)), arrived_(arrived) {
  reader_ = backend.star().Generate(context_.get(), request);
}

GenerationCall::~GenerationCall() {
  if (finished_) return;
  context_->TryCancel();
  v1::GenerateResponse ignored;
  while (reader_->Read(&ignored)) {
  }
  (void)reader_->Finish();
}

bool GenerationCall::next(v1::GenerateResponse& response) {
  if (!reader_->Read(&response)) return false;
  const Clock::time_point now = Clock::now();
  if (const int tokens = response.has_chunk() ? response.chunk().token_ids_size() : 0; tokens > 0) {
    int first = 0;
    if (!time_to_first_token_) {
      time_to_first_token_ = seconds(now - arrived_);
      first = 1;
    }
    // Tokens that arrive together share the gap since the previous chunk.
    const double gap = last_token_ ? seconds(now - *last_token_) / tokens : 0;
    for (int i = first; i < tokens; ++i) inter_token_latencies_.push_back(gap);
    last_token_ = now;
  }
  if (response.has_done()) {
    done_ = response.done();
    e2e_seconds_ = seconds(now - arrived_);
  }
  return true;
}

grpc::Status GenerationCall::finish() {
  finished_ = true;
  return reader_->Finish();
}

RequestObservation GenerationCall::observation() const {
  RequestObservation o;
  if (done_) {
    o.prompt_tokens = done_->usage().prompt_tokens();
    o.generation_tokens = done_->usage().completion_tokens();
    o.phase1_seconds = done_->timings().phase1_seconds();
    o.finish_reason = done_->finish_reason();
    o.sparse_attention = done_->sparse_attention();
  }
  o.time_to_first_token = time_to_first_token_;
  o.inter_token_latencies = inter_token_latencies_;
  o.e2e_seconds = e2e_seconds_;
  return o;
}

}  // namespace star::http
