// gRPC request validation: the input (after a first byte) is a serialized star.v1.GenerateRequest
// or CreateContextRequest, checked by the server's request parsing against the tiny synthetic
// model on 1 to 4 ranks, with one kept context "ctx-fuzz" for session requests. A request that
// passes must be work the ranks can do: a query, every id inside the vocabulary, everything within
// the model's positions, a plan with blocks for a context.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/stubs/common.h>

#include "fuzz/fuzz_support.h"
#include "star/engine/runtime_model.h"
#include "star/model/synthetic_model.h"
#include "star/server/request_parsing.h"

namespace {

using star::server::ContextRegistry;

constexpr int kMaxRanks = 4;
const char* const kContextId = "ctx-fuzz";

struct Server {
  star::RuntimeModel model;
  star::AttentionConfig attention;
  std::vector<std::unique_ptr<ContextRegistry>> contexts;  // [ranks - 1]
};

std::unique_ptr<Server> make_server(const star::fuzz::ScratchDir& scratch) {
  // Parsing fuzzed bytes logs every string field that is not UTF-8; the rejection is what counts.
  google::protobuf::SetLogHandler(nullptr);
  auto server = std::make_unique<Server>();
  star::Result<star::LlamaConfig> tiny = star::synthetic_preset("tiny");
  if (!tiny.ok()) star::fuzz::setup_failed(tiny.status().to_string());
  const auto dir = scratch.path() / "tiny";
  if (star::Status s = star::write_synthetic_model({.config = *tiny, .seed = 1}, dir); !s.ok()) {
    star::fuzz::setup_failed(s.to_string());
  }
  star::Result<star::RuntimeModel> model = star::open_model(dir);
  if (!model.ok()) star::fuzz::setup_failed(model.status().to_string());
  server->model = std::move(*model);
  for (int ranks = 1; ranks <= kMaxRanks; ++ranks) {
    auto registry = std::make_unique<ContextRegistry>(int64_t{1} << 30, ranks);
    star::server::ContextEntry entry;
    entry.id = kContextId;
    entry.context_ids = std::make_shared<const std::vector<int32_t>>(std::vector<int32_t>(100, 7));
    entry.attention = server->attention;
    entry.rank_bytes.assign(ranks, 1024);
    entry.last_used = star::server::Clock::now();
    if (star::Status s = registry->admit(std::move(entry)); !s.ok()) star::fuzz::setup_failed(s.to_string());
    server->contexts.push_back(std::move(registry));
  }
  return server;
}

void check_ids(const char* what, const std::vector<int32_t>& ids, int64_t vocab_size) {
  for (int32_t id : ids) STAR_FUZZ_CHECK(id >= 0 && id < vocab_size, std::string(what) + " id " + std::to_string(id));
}

void check_generate(const star::server::GenerateWork& work, const star::LlamaConfig& config) {
  STAR_FUZZ_CHECK(!work.query_ids.empty(), "accepted without a query");
  STAR_FUZZ_CHECK(work.generation.max_tokens >= 1, std::to_string(work.generation.max_tokens));
  check_ids("query", work.query_ids, config.vocab_size);
  check_ids("context", work.context_ids, config.vocab_size);
  check_ids("stop", work.generation.stop_token_ids, config.vocab_size);
  const int64_t context = work.context_id.empty() ? static_cast<int64_t>(work.context_ids.size()) : 100;
  STAR_FUZZ_CHECK(work.generation.max_tokens <= config.max_position_embeddings &&
                      context + static_cast<int64_t>(work.query_ids.size()) + work.generation.max_tokens <=
                          config.max_position_embeddings,
                  "accepted past the model's positions");
  // An empty inline context has no Phase 1 and so no blocks.
  if (!work.context_ids.empty()) STAR_FUZZ_CHECK(work.context_blocks >= 1, "a plan without blocks");
}

void check_create_context(const star::server::CreateContextWork& work, const star::LlamaConfig& config) {
  STAR_FUZZ_CHECK(!work.context_ids.empty(), "accepted an empty context");
  check_ids("context", work.context_ids, config.vocab_size);
  const auto tokens = static_cast<int64_t>(work.context_ids.size());
  STAR_FUZZ_CHECK(tokens + 2 <= config.max_position_embeddings, "no room for a query and an answer");
  STAR_FUZZ_CHECK(work.reserve_tokens >= 0 && tokens + work.reserve_tokens <= config.max_position_embeddings,
                  "reserve_tokens " + std::to_string(work.reserve_tokens));
  STAR_FUZZ_CHECK(work.context_blocks >= 1, "a plan without blocks");
}

}  // namespace

// The first byte: bit 0 picks the message (GenerateRequest, CreateContextRequest), bits 1-2 the
// rank count minus one.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  static const std::unique_ptr<Server> server = make_server(scratch);
  if (size == 0) return 0;
  const bool create_context = (data[0] & 1) != 0;
  const int ranks = 1 + ((data[0] >> 1) & 3);
  const star::server::RequestDefaults defaults{
      .model = server->model, .attention = server->attention, .ranks = ranks, .limits = {}, .scheduler = {}};
  const star::LlamaConfig& config = server->model.llama->config();

  if (create_context) {
    star::v1::CreateContextRequest request;
    if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    auto work = star::server::parse_create_context_request(request, defaults);
    if (work.ok()) check_create_context(*work, config);
    else STAR_FUZZ_CHECK(!work.status().message().empty(), "an error without a message");
    return 0;
  }
  star::v1::GenerateRequest request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  auto work = star::server::parse_generate_request(request, defaults, *server->contexts[ranks - 1]);
  if (work.ok()) check_generate(*work, config);
  else STAR_FUZZ_CHECK(!work.status().message().empty(), "an error without a message");
  return 0;
}
