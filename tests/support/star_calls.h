// Client-side helpers for tests of the star.v1 API: one Generate or CreateContext call read to its
// end, with everything the stream carried.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "star/v1/star.grpc.pb.h"

namespace star::testing {

struct CallOptions {
  std::string api_key;
  std::optional<std::chrono::milliseconds> deadline;
  std::string forwarded_for;  // sent as x-forwarded-for, as a proxy names its client
};

inline std::unique_ptr<grpc::ClientContext> make_context(const CallOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!options.api_key.empty()) context->AddMetadata("authorization", "Bearer " + options.api_key);
  if (options.deadline) context->set_deadline(std::chrono::system_clock::now() + *options.deadline);
  if (!options.forwarded_for.empty()) context->AddMetadata("x-forwarded-for", options.forwarded_for);
  return context;
}

struct GenerateStream {
  grpc::Status status;
  std::string request_id;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<v1::Phase1Progress> progress;
  std::optional<v1::GenerateDone> done;
  int chunks = 0;
};

// on_chunk(stream so far, context): called after each chunk; it may cancel through the context.
using ChunkHook = std::function<void(const GenerateStream&, grpc::ClientContext&)>;

inline GenerateStream generate(v1::StarService::Stub& stub, const v1::GenerateRequest& request,
                               const CallOptions& options = {}, const ChunkHook& on_chunk = {}) {
  auto context = make_context(options);
  auto reader = stub.Generate(context.get(), request);
  GenerateStream out;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    out.request_id = response.request_id();
    if (response.has_progress()) out.progress.push_back(response.progress());
    if (response.has_done()) out.done = response.done();
    if (response.has_chunk()) {
      out.text += response.chunk().text();
      out.token_ids.insert(out.token_ids.end(), response.chunk().token_ids().begin(), response.chunk().token_ids().end());
      ++out.chunks;
      if (on_chunk) on_chunk(out, *context);
    }
  }
  out.status = reader->Finish();
  return out;
}

struct CreateContextStream {
  grpc::Status status;
  std::vector<v1::Phase1Progress> progress;
  std::optional<v1::ContextInfo> context;
};

inline CreateContextStream create_context(v1::StarService::Stub& stub, const v1::CreateContextRequest& request,
                                          const CallOptions& options = {}) {
  auto context = make_context(options);
  auto reader = stub.CreateContext(context.get(), request);
  CreateContextStream out;
  v1::CreateContextResponse response;
  while (reader->Read(&response)) {
    if (response.has_progress()) out.progress.push_back(response.progress());
    if (response.has_context()) out.context = response.context();
  }
  out.status = reader->Finish();
  return out;
}

inline v1::GenerateRequest text_request(const std::string& context, const std::string& query, int64_t max_tokens,
                                        float temperature = 0, uint64_t seed = 0) {
  v1::GenerateRequest r;
  r.mutable_text()->set_context(context);
  r.mutable_text()->set_query(query);
  r.set_max_tokens(max_tokens);
  r.mutable_sampling()->set_temperature(temperature);
  r.mutable_sampling()->set_seed(seed);
  return r;
}

inline v1::GenerateRequest session_request(const std::string& context_id, const std::string& query,
                                           int64_t max_tokens, float temperature = 0, uint64_t seed = 0) {
  v1::GenerateRequest r;
  r.mutable_session()->set_context_id(context_id);
  r.mutable_session()->set_query_text(query);
  r.set_max_tokens(max_tokens);
  r.mutable_sampling()->set_temperature(temperature);
  r.mutable_sampling()->set_seed(seed);
  return r;
}

}  // namespace star::testing
