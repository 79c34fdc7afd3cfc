// The whole server in one process on one rank (SelfCommunicator): gRPC service, queue, channels
// and engine loop, checked against run_inference on a separately loaded copy of the model. The
// multi-rank behaviour is covered end to end by tests/cli/server.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "star/dist/self_communicator.h"
#include "star/engine/inference.h"
#include "star/model/kv_cache.h"
#include "star/server/proto_convert.h"
#include "star/server/star_server.h"
#include "support/running_server.h"
#include "support/star_calls.h"
#include "support/temp_dir.h"

namespace star::server {
namespace {

using star::testing::CallOptions;
using star::testing::GenerateStream;
using star::testing::RunningServer;
using star::testing::generate;
using star::testing::session_request;
using star::testing::text_request;
using Health = grpc::health::v1::HealthCheckResponse;

std::string context_text(int lines) {
  std::string text;
  for (int i = 1; i <= lines; ++i) text += "Line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog.\n";
  return text;
}

class InProcessServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new star::testing::TempDir;
    const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + model_dir().string() +
                             " --preset tiny --seed 2 >/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);
    Result<RuntimeModel> m = open_model(model_dir());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    reference_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete dir_;
  }
  static std::filesystem::path model_dir() { return dir_->path() / "model"; }

  // What the engine itself answers, without the server.
  static GenerationResult expected(const std::vector<int32_t>& context_ids, const std::vector<int32_t>& query_ids,
                                   const GenerationOptions& options) {
    SelfCommunicator comm;
    InferenceRequest request{context_ids, query_ids, AttentionConfig{}, options};
    Result<InferenceOutcome> out = run_inference(*reference_, comm, request);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? out->generation : GenerationResult{};
  }

  static std::vector<int32_t> tokenize(const std::string& text, bool bos) {
    return reference_->tokenizer->encode(text, {.add_bos = bos});
  }

  static star::testing::TempDir* dir_;
  static RuntimeModel* reference_;
};

star::testing::TempDir* InProcessServer::dir_ = nullptr;
RuntimeModel* InProcessServer::reference_ = nullptr;

TEST_F(InProcessServer, WhileLoadingCallsAreUnavailableAndHealthIsNotServing) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  Result<std::unique_ptr<StarServer>> server = StarServer::start(options, 1);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials());
  GenerateStream s = generate(*v1::StarService::NewStub(channel), text_request("", "hi", 2));
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.status.error_message().find("loading"), std::string::npos);
  grpc::ClientContext context;
  Health health;
  ASSERT_TRUE(grpc::health::v1::Health::NewStub(channel)->Check(&context, {}, &health).ok());
  EXPECT_EQ(health.status(), Health::NOT_SERVING);
}

TEST_F(InProcessServer, AnotherServerCannotTakeTheSamePort) {
  RunningServer running(model_dir(), {});
  ServerOptions options;
  options.listen_address = "127.0.0.1:" + std::to_string(running.server().port());
  Result<std::unique_ptr<StarServer>> second = StarServer::start(options, 1);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

TEST_F(InProcessServer, StreamsWhatTheEngineGenerates) {
  RunningServer running(model_dir(), {});
  const std::string context = context_text(10);
  struct Case {
    std::string query;
    float temperature;
    uint64_t seed;
    std::vector<std::string> stop;
  };
  for (const Case& c : std::vector<Case>{{"What jumps?", 0, 0, {}}, {"Who sleeps?", 0.9f, 7, {}}, {"Again?", 1.2f, 3, {"e"}}}) {
    SCOPED_TRACE(c.query);
    v1::GenerateRequest request = text_request(context, c.query, 20, c.temperature, c.seed);
    for (const std::string& s : c.stop) request.add_stop(s);
    GenerateStream got = generate(running.stub(), request);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    GenerationOptions options;
    options.max_tokens = 20;
    options.sampling.temperature = c.temperature;
    options.sampling.seed = c.seed;
    options.stop_strings = c.stop;
    const GenerationResult want = expected(tokenize(context, true), tokenize(c.query, false), options);
    EXPECT_EQ(got.text, want.text);
    EXPECT_EQ(got.token_ids, want.tokens);
    EXPECT_EQ(got.done->finish_reason(), finish_reason_to_proto(want.finish_reason));
    EXPECT_EQ(got.done->usage().completion_tokens(), static_cast<int64_t>(want.tokens.size()));
    EXPECT_EQ(got.done->usage().prompt_tokens(),
              static_cast<int64_t>(tokenize(context, true).size() + tokenize(c.query, false).size()));
    EXPECT_GT(got.done->timings().time_to_first_token_seconds(), got.done->timings().phase1_seconds());
  }
}

// Skip Softmax with S = 1e-30 answers like dense, and GenerateDone counts the tiles of each phase.
TEST_F(InProcessServer, GenerateDoneCountsSkipSoftmaxTiles) {
  RunningServer running(model_dir(), {});
  const std::string context = context_text(10);
  v1::GenerateRequest request = text_request(context, "What jumps?", 12, 0, 0);
  auto& sparse = *request.mutable_attention()->mutable_sparse_attention()->mutable_fields();
  sparse["algorithm"].set_string_value("skip_softmax");
  sparse["threshold_scale_factor"].set_number_value(1e-30);
  GenerateStream got = generate(running.stub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  GenerationOptions options;
  options.max_tokens = 12;
  const GenerationResult want = expected(tokenize(context, true), tokenize("What jumps?", false), options);
  EXPECT_EQ(got.token_ids, want.tokens);
  const v1::SparseAttentionStats& stats = got.done->sparse_attention();
  EXPECT_GT(stats.phase1().visited(), 0);
  EXPECT_EQ(stats.phase1().skipped(), 0);
  EXPECT_GT(stats.phase2().visited(), 0);
  EXPECT_EQ(stats.phase2().skipped(), 0);
}

// A stop string ends an answer by cancelling it in the engine loop, not through the engine's own end:
// its GenerateDone still counts the Phase 1 tiles, as many as the same request's uncut answer.
TEST_F(InProcessServer, AnAnswerCutByAStopStringCountsItsPhase1Tiles) {
  RunningServer running(model_dir(), {});
  v1::GenerateRequest request = text_request(context_text(10), "What jumps?", 400, 0, 0);
  request.set_ignore_eos(true);
  auto& sparse = *request.mutable_attention()->mutable_sparse_attention()->mutable_fields();
  sparse["algorithm"].set_string_value("skip_softmax");
  sparse["threshold_scale_factor"].set_number_value(1e-30);
  const GenerateStream whole = generate(running.stub(), request);
  ASSERT_TRUE(whole.status.ok()) << whole.status.error_message();
  ASSERT_GE(whole.text.size(), 8u);
  // Found within the first tokens, long before the 400th: the cut comes while the engine decodes.
  request.add_stop(whole.text.substr(2, 2));
  const GenerateStream cut = generate(running.stub(), request);
  ASSERT_TRUE(cut.status.ok()) << cut.status.error_message();
  EXPECT_EQ(cut.done->finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_LT(cut.token_ids.size(), whole.token_ids.size());
  EXPECT_GT(whole.done->sparse_attention().phase1().visited(), 0);
  EXPECT_EQ(cut.done->sparse_attention().phase1().visited(), whole.done->sparse_attention().phase1().visited());
}

TEST_F(InProcessServer, StopTokenIdsEndTheAnswerAndStayOutOfIt) {
  RunningServer running(model_dir(), {});
  v1::GenerateRequest request;
  const std::vector<int32_t> query = tokenize("Once upon a time", true);
  request.mutable_tokens()->mutable_query_ids()->Add(query.begin(), query.end());
  request.set_max_tokens(16);
  request.set_ignore_eos(true);
  GenerateStream free_run = generate(running.stub(), request);
  ASSERT_TRUE(free_run.status.ok());
  ASSERT_GE(free_run.token_ids.size(), 4u);
  const int32_t stop = free_run.token_ids[3];
  request.add_stop_token_ids(stop);
  GenerateStream stopped = generate(running.stub(), request);
  ASSERT_TRUE(stopped.status.ok());
  GenerationOptions options;
  options.max_tokens = 16;
  options.ignore_eos = true;
  options.stop_token_ids = {stop};
  const GenerationResult want = expected({}, query, options);
  EXPECT_EQ(stopped.token_ids, want.tokens);
  EXPECT_EQ(stopped.text, want.text);
  EXPECT_EQ(stopped.done->finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_EQ(std::find(stopped.token_ids.begin(), stopped.token_ids.end(), stop), stopped.token_ids.end());
}

TEST_F(InProcessServer, ContextsAnswerLikeInlineRequestsAndAreReleasedOnEveryRank) {
  RunningServer running(model_dir(), {});
  const std::string context = context_text(8);
  v1::CreateContextRequest create;
  create.set_text(context);
  star::testing::CreateContextStream made = star::testing::create_context(running.stub(), create);
  ASSERT_TRUE(made.status.ok()) << made.status.error_message();
  const std::string id = made.context->context_id();
  EXPECT_EQ(made.context->context_tokens(), static_cast<int64_t>(tokenize(context, true).size()));

  GenerationOptions options;
  options.max_tokens = 12;
  const GenerationResult want = expected(tokenize(context, true), tokenize("Who?", false), options);
  GenerateStream session = generate(running.stub(), session_request(id, "Who?", 12));
  ASSERT_TRUE(session.status.ok());
  EXPECT_EQ(session.text, want.text);
  EXPECT_EQ(session.done->usage().cached_tokens(), made.context->context_tokens());
  EXPECT_EQ(session.done->timings().phase1_seconds(), 0);

  v1::CreateContextRequest second = create;
  second.set_text(context_text(3));
  const star::testing::CreateContextStream kept = star::testing::create_context(running.stub(), second);
  ASSERT_TRUE(kept.status.ok());
  v1::DeleteContextRequest drop;
  drop.set_context_id(id);
  v1::DeleteContextResponse dropped;
  grpc::ClientContext call;
  ASSERT_TRUE(running.stub().DeleteContext(&call, drop, &dropped).ok());
  ASSERT_TRUE(running.stop().ok());
  EXPECT_EQ(running.engine().context(id), nullptr) << "the deleted context is gone from the rank";
  EXPECT_NE(running.engine().context(kept.context->context_id()), nullptr) << "the other is kept";
}

// Continuous batching: N queries on one encoded context asked at once all stream together (every
// one has its first token before any has its last) and each answers exactly what it answers alone.
TEST_F(InProcessServer, ConcurrentQueriesOnOneContextStreamTogetherAndAnswerAsAlone) {
  constexpr int kQueries = 4;
  // Long enough that no answer can end before the last client's call reaches the server, even on a
  // loaded machine (48 tokens of the tiny model took less than one call's arrival under ctest -j2).
  constexpr int kMaxTokens = 1000;
  RunningServer running(model_dir(), {});
  v1::CreateContextRequest create;
  create.set_text(context_text(12));
  const star::testing::CreateContextStream made = star::testing::create_context(running.stub(), create);
  ASSERT_TRUE(made.status.ok()) << made.status.error_message();
  const std::string id = made.context->context_id();
  auto request = [&](int i) {
    v1::GenerateRequest r = session_request(id, "Question " + std::to_string(i) + "?", kMaxTokens);
    r.set_ignore_eos(true);
    if (i % 2 == 1) {
      r.mutable_sampling()->set_temperature(0.8f);
      r.mutable_sampling()->set_seed(static_cast<uint64_t>(100 + i));
    }
    return r;
  };
  std::vector<GenerateStream> alone;
  for (int i = 0; i < kQueries; ++i) {
    alone.push_back(generate(running.stub(), request(i)));
    ASSERT_TRUE(alone.back().status.ok()) << alone.back().status.error_message();
    ASSERT_EQ(alone.back().token_ids.size(), static_cast<size_t>(kMaxTokens));
  }

  std::atomic<int> finished{0};
  std::vector<int> finished_before_first(kQueries, -1);
  std::vector<GenerateStream> together(kQueries);
  std::vector<std::thread> clients;
  for (int i = 0; i < kQueries; ++i) {
    clients.emplace_back([&, i] {
      together[i] = generate(running.stub(), request(i), {}, [&, i](const GenerateStream& so_far, grpc::ClientContext&) {
        if (finished_before_first[i] < 0 && !so_far.token_ids.empty()) finished_before_first[i] = finished.load();
      });
      ++finished;
    });
  }
  for (std::thread& client : clients) client.join();
  for (int i = 0; i < kQueries; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(together[i].status.ok()) << together[i].status.error_message();
    EXPECT_EQ(finished_before_first[i], 0) << "its first token came after another answer had ended";
    EXPECT_EQ(together[i].token_ids, alone[i].token_ids);
    EXPECT_EQ(together[i].text, alone[i].text);
  }
}

TEST_F(InProcessServer, ApiKeyGuardsEveryCallButHealth) {
  ServerOptions options;
  options.api_key = "sesame";
  RunningServer running(model_dir(), options);
  const v1::GenerateRequest request = text_request("", "Knock knock", 3);
  EXPECT_EQ(generate(running.stub(), request).status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(generate(running.stub(), request, CallOptions{"sesame!", std::nullopt}).status.error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(generate(running.stub(), request, CallOptions{"sesame", std::nullopt}).status.ok());
  v1::ServerInfo info;
  grpc::ClientContext call;
  EXPECT_EQ(running.stub().GetServerInfo(&call, {}, &info).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(running.health(), Health::SERVING);
}

TEST_F(InProcessServer, ServesOverTls) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "openssl is not installed";
  star::testing::TempDir certs;
  const std::string cert = (certs.path() / "cert.pem").string(), key = (certs.path() / "key.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-addext subjectAltName=DNS:localhost -keyout " + key + " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0);
  ServerOptions options;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  std::ifstream pem(cert);
  grpc::SslCredentialsOptions trust;
  trust.pem_root_certs.assign(std::istreambuf_iterator<char>(pem), {});
  RunningServer running(model_dir(), options, grpc::SslCredentials(trust));
  EXPECT_TRUE(generate(running.stub(), text_request("", "Secret?", 3)).status.ok());

  auto plaintext = v1::StarService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(running.server().port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext call;
  call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ServerInfo info;
  EXPECT_EQ(plaintext->GetServerInfo(&call, {}, &info).error_code(), grpc::StatusCode::UNAVAILABLE);

  options.tls_cert_file = (certs.path() / "missing.pem").string();
  Result<std::unique_ptr<StarServer>> missing = StarServer::start(options, 1);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("--tls-cert"), std::string::npos);
}

TEST_F(InProcessServer, ShutdownLetsWorkFinishThenCancelsItAtTheTimeout) {
  ServerOptions options;
  options.shutdown_timeout = std::chrono::milliseconds(200);
  RunningServer running(model_dir(), options);
  v1::GenerateRequest request = text_request("", "Never stop", 4000);
  request.set_ignore_eos(true);
  std::chrono::steady_clock::time_point asked;
  GenerateStream s = generate(running.stub(), request, {}, [&](const GenerateStream&, grpc::ClientContext&) {
    if (asked.time_since_epoch().count() != 0) return;
    asked = std::chrono::steady_clock::now();
    running.server().begin_shutdown();
    EXPECT_EQ(running.health(), Health::NOT_SERVING);
    EXPECT_EQ(generate(running.stub(), text_request("", "late", 2)).status.error_code(), grpc::StatusCode::UNAVAILABLE);
  });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(s.done.has_value()) << "a cut answer ends with the status alone";
  EXPECT_GE(waited, 0.2);
  EXPECT_TRUE(running.stop().ok());
}

// GetServerInfo counts the requests the engine runs and those waiting for it: two long answers
// asked at once are both counted (running or waiting) while one streams.
TEST_F(InProcessServer, ServerInfoCountsRunningAndWaitingRequests) {
  RunningServer running(model_dir(), {});
  auto info = [&] {
    grpc::ClientContext call;
    v1::ServerInfo i;
    EXPECT_TRUE(running.stub().GetServerInfo(&call, {}, &i).ok());
    return i;
  };
  v1::GenerateRequest request = text_request("", "Keep going", 400);
  request.set_ignore_eos(true);
  std::atomic<bool> seen_both{false};
  auto client = [&] {
    generate(running.stub(), request, {}, [&](const GenerateStream&, grpc::ClientContext& context) {
      const v1::ServerInfo i = info();
      EXPECT_GE(i.running_requests(), 1);
      if (i.running_requests() + i.queued_requests() == 2) seen_both = true;
      // Once both were counted, the answers need not run to the end.
      if (seen_both) context.TryCancel();
    });
  };
  std::thread first(client), second(client);
  first.join();
  second.join();
  EXPECT_TRUE(seen_both) << "both requests were counted at once";
  EXPECT_TRUE(running.stop().ok());
}

TEST_F(InProcessServer, ModelAndServerInfoDescribeWhatIsLoaded) {
  ServerOptions options;
  options.attention.algorithm = "dense";
  options.queue_capacity = 7;
  RunningServer running(model_dir(), options);
  v1::ModelInfo model;
  grpc::ClientContext call1;
  ASSERT_TRUE(running.stub().GetModelInfo(&call1, {}, &model).ok());
  const LlamaConfig& c = reference_->llama->config();
  EXPECT_EQ(model.layers(), c.n_layers);
  EXPECT_EQ(model.vocab_size(), c.vocab_size);
  EXPECT_EQ(model.max_position_embeddings(), c.max_position_embeddings);
  EXPECT_EQ(model.attention().algorithm(), "dense");
  EXPECT_EQ(model.ranks(), 1);
  EXPECT_EQ(model.kv_bytes_per_token(), static_cast<int64_t>(KvCache(c.n_layers, c.n_kv_heads, c.head_dim).bytes_per_token()));
  v1::ServerInfo info;
  grpc::ClientContext call2;
  ASSERT_TRUE(running.stub().GetServerInfo(&call2, {}, &info).ok());
  EXPECT_EQ(info.queue_capacity(), 7);
  EXPECT_EQ(info.ranks(), 1);

  v1::TokenizeRequest tokenize_request;
  tokenize_request.set_text("the lazy dog");
  tokenize_request.set_add_bos(true);
  v1::TokenizeResponse ids;
  grpc::ClientContext call3;
  ASSERT_TRUE(running.stub().Tokenize(&call3, tokenize_request, &ids).ok());
  EXPECT_EQ(std::vector<int32_t>(ids.ids().begin(), ids.ids().end()), tokenize("the lazy dog", true));
  v1::DetokenizeRequest detokenize_request;
  *detokenize_request.mutable_ids() = ids.ids();
  v1::DetokenizeResponse text;
  grpc::ClientContext call4;
  ASSERT_TRUE(running.stub().Detokenize(&call4, detokenize_request, &text).ok());
  EXPECT_EQ(text.text(), "the lazy dog");
}

}  // namespace
}  // namespace star::server
