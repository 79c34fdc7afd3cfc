// The server's request limits, each at its value (accepted) and one past it (refused with the
// documented status and a message naming the field, the value and the flag), before any work is
// queued; and what a failed server (a lost rank) answers. One rank, in this process.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "support/running_server.h"
#include "support/star_calls.h"
#include "support/temp_dir.h"

namespace star::testing {
namespace {

using Health = grpc::health::v1::HealthCheckResponse;

constexpr int64_t kContextTokens = 100;
constexpr int64_t kMaxTokens = 8;
constexpr int64_t kStopStrings = 2;
constexpr int64_t kStopBytes = 4;
constexpr int64_t kRequestBytes = 64 << 10;
constexpr int64_t kCacheTokens = 60;  // the context cache holds this many tokens' KV

class Limits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const std::string make =
        std::string(STAR_MKMODEL_PATH) + " --out " + model_dir().string() + " --preset tiny --seed 4 >/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::filesystem::path model_dir() { return dir_->path() / "model"; }

  static server::ServerOptions limited(int64_t kv_bytes_per_token) {
    server::ServerOptions o;
    o.limits.max_request_bytes = kRequestBytes;
    o.limits.max_context_tokens = kContextTokens;
    o.limits.max_tokens = kMaxTokens;
    o.limits.max_stop_strings = kStopStrings;
    o.limits.max_stop_string_bytes = kStopBytes;
    o.default_max_tokens = kMaxTokens;
    o.context_cache_bytes = kCacheTokens * kv_bytes_per_token;
    return o;
  }

  // Options with at most `streams` streams per client and room for long answers.
  static server::ServerOptions streams_limited(int64_t streams) {
    server::ServerOptions o;
    o.limits.max_streams_per_client = streams;
    o.default_max_tokens = 4000;
    return o;
  }

  // The server's count of requests running or queued.
  static std::function<int32_t()> active_requests(RunningServer& running) {
    return [&running] {
      grpc::ClientContext context;
      v1::ServerInfo info;
      EXPECT_TRUE(running.stub().GetServerInfo(&context, {}, &info).ok());
      return info.active_requests();
    };
  }

  // The model's KV bytes per token, as the server reports it.
  static int64_t kv_bytes_per_token() { return model_info(KvDType::kF32).kv_bytes_per_token(); }

  static v1::ModelInfo model_info(KvDType kv_dtype) {
    RunningServer probe(model_dir(), {}, grpc::InsecureChannelCredentials(), kv_dtype);
    grpc::ClientContext context;
    v1::ModelInfo info;
    EXPECT_TRUE(probe.stub().GetModelInfo(&context, {}, &info).ok());
    return info;
  }

  static inline TempDir* dir_ = nullptr;
};

// n valid token ids.
std::vector<int32_t> ids(int64_t n) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<int32_t>(1 + i % 200));
  return out;
}

v1::GenerateRequest tokens_request(int64_t context_tokens, int64_t max_tokens) {
  v1::GenerateRequest r;
  for (int32_t id : ids(context_tokens)) r.mutable_tokens()->add_context_ids(id);
  r.mutable_tokens()->add_query_ids(7);
  r.set_max_tokens(max_tokens);
  return r;
}

// A prompt of n token ids with no separate context.
v1::GenerateRequest query_only_request(int64_t n) {
  v1::GenerateRequest r;
  for (int32_t id : ids(n)) r.mutable_tokens()->add_query_ids(id);
  r.set_max_tokens(1);
  return r;
}

v1::CreateContextRequest context_request(int64_t tokens) {
  v1::CreateContextRequest r;
  for (int32_t id : ids(tokens)) r.mutable_ids()->add_ids(id);
  return r;
}

struct Case {
  const char* name;
  std::function<GenerateStream(v1::StarService::Stub&)> at_limit;
  std::function<GenerateStream(v1::StarService::Stub&)> past_limit;
  grpc::StatusCode code;
  std::string message;  // what the refusal's message contains
};

TEST_F(Limits, GenerateAtEachLimitIsServedAndOnePastIsRefused) {
  RunningServer running(model_dir(), limited(kv_bytes_per_token()));
  auto with_stops = [](std::vector<std::string> stops) {
    return [stops](v1::StarService::Stub& stub) {
      v1::GenerateRequest r = tokens_request(4, 2);
      for (const std::string& s : stops) r.add_stop(s);
      return generate(stub, r);
    };
  };
  // A text context padded so that the whole message is `bytes` long.
  auto sized = [](int64_t bytes) {
    return [bytes](v1::StarService::Stub& stub) {
      v1::GenerateRequest r = text_request("", "hi", 1);
      r.mutable_text()->set_context(std::string(static_cast<size_t>(bytes), 'a'));
      const int64_t over = static_cast<int64_t>(r.ByteSizeLong()) - bytes;
      r.mutable_text()->set_context(std::string(static_cast<size_t>(bytes - over), 'a'));
      EXPECT_EQ(static_cast<int64_t>(r.ByteSizeLong()), bytes);
      return generate(stub, r);
    };
  };
  const std::vector<Case> cases = {
      {"context tokens", [](auto& stub) { return generate(stub, tokens_request(kContextTokens, 1)); },
       [](auto& stub) { return generate(stub, tokens_request(kContextTokens + 1, 1)); },
       grpc::StatusCode::INVALID_ARGUMENT,
       "tokens.context_ids: 101 context tokens exceed the server's limit of 100 (--max-context-tokens)"},
      {"prompt tokens without a context", [](auto& stub) { return generate(stub, query_only_request(kContextTokens)); },
       [](auto& stub) { return generate(stub, query_only_request(kContextTokens + 1)); },
       grpc::StatusCode::INVALID_ARGUMENT,
       "tokens.query_ids: 101 prompt tokens exceed the server's limit of 100 (--max-context-tokens)"},
      {"max_tokens", [](auto& stub) { return generate(stub, tokens_request(4, kMaxTokens)); },
       [](auto& stub) { return generate(stub, tokens_request(4, kMaxTokens + 1)); }, grpc::StatusCode::INVALID_ARGUMENT,
       "max_tokens: 9 exceeds the server's limit of 8 (--max-tokens-limit)"},
      // The largest max_tokens a client can send is reported as sent, not wrapped around.
      {"max_tokens 2^63 - 1", [](auto& stub) { return generate(stub, tokens_request(4, kMaxTokens)); },
       [](auto& stub) { return generate(stub, tokens_request(4, std::numeric_limits<int64_t>::max())); }, grpc::StatusCode::INVALID_ARGUMENT,
       "max_tokens: 9223372036854775807 exceeds the server's limit of 8 (--max-tokens-limit)"},
      {"stop strings", with_stops({"xyz", "qqq"}), with_stops({"xyz", "qqq", "zzz"}), grpc::StatusCode::INVALID_ARGUMENT,
       "stop: 3 stop strings exceed the server's limit of 2 (--max-stop-strings)"},
      {"stop string bytes", with_stops({"abcd"}), with_stops({"abcd", "abcde"}), grpc::StatusCode::INVALID_ARGUMENT,
       "stop[1]: 5 bytes exceed the server's limit of 4 bytes per stop string (--max-stop-string-bytes)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const GenerateStream at = c.at_limit(running.stub());
    EXPECT_TRUE(at.status.ok()) << at.status.error_message();
    EXPECT_TRUE(at.done.has_value());
    const GenerateStream past = c.past_limit(running.stub());
    EXPECT_EQ(past.status.error_code(), c.code);
    EXPECT_EQ(past.status.error_message(), c.message);
    EXPECT_FALSE(past.done.has_value());
  }

  // The request body: a message at --max-request-bytes reaches the server's checks (here the
  // context-token limit, as its text is long); one byte past it is refused as a bad request (no
  // retry can help), naming its size and the limit; past twice the limit gRPC refuses it unread.
  const GenerateStream at = sized(kRequestBytes)(running.stub());
  EXPECT_EQ(at.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << at.status.error_message();
  EXPECT_EQ(at.status.error_message().rfind("text.context: ", 0), 0u) << at.status.error_message();
  const GenerateStream past = sized(kRequestBytes + 1)(running.stub());
  EXPECT_EQ(past.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << past.status.error_message();
  EXPECT_EQ(past.status.error_message(), "the request is " + std::to_string(kRequestBytes + 1) +
                                             " bytes, more than the server's limit of " +
                                             std::to_string(kRequestBytes) + " bytes per request (--max-request-bytes)");
  const GenerateStream far_past = sized(2 * kRequestBytes + 1)(running.stub());
  EXPECT_EQ(far_past.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << far_past.status.error_message();
}

TEST_F(Limits, ContextCacheBytesAreCheckedBeforePhase1) {
  const int64_t per_token = kv_bytes_per_token();
  RunningServer running(model_dir(), limited(per_token));

  const CreateContextStream at = create_context(running.stub(), context_request(kCacheTokens));
  ASSERT_TRUE(at.status.ok()) << at.status.error_message();
  ASSERT_TRUE(at.context.has_value());
  EXPECT_EQ(at.context->rank_bytes(0), kCacheTokens * per_token) << "the context fills the cache exactly";

  const CreateContextStream past = create_context(running.stub(), context_request(kCacheTokens + 1));
  EXPECT_EQ(past.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(past.status.error_message(), "context: its KV needs " + std::to_string((kCacheTokens + 1) * per_token) +
                                             " bytes on rank 0, more than the context cache's " +
                                             std::to_string(kCacheTokens * per_token) +
                                             " bytes per rank (--context-cache-bytes)");
  EXPECT_TRUE(past.progress.empty()) << "refused before Phase 1";

  const CreateContextStream too_long = create_context(running.stub(), context_request(kContextTokens + 1));
  EXPECT_EQ(too_long.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(too_long.status.error_message(),
            "ids.ids: 101 context tokens exceed the server's limit of 100 (--max-context-tokens)");
}

// --kv-cache-bytes: a request reserves its inline context's shard and room for its query and
// max_tokens answer tokens on the query host (one rank here: all of it on rank 0). At the budget it
// is served; one token's room more is refused before it is queued, naming the fields and the flag.
TEST_F(Limits, KvCacheBytesBoundWhatOneRequestReserves) {
  const int64_t per_token = kv_bytes_per_token();
  constexpr int64_t kContext = 10, kAnswer = 4;  // tokens_request has one query token
  server::ServerOptions options = limited(per_token);
  options.scheduler.kv_cache_bytes = (kContext + 1 + kAnswer) * per_token;
  RunningServer running(model_dir(), options);

  const GenerateStream at = generate(running.stub(), tokens_request(kContext, kAnswer));
  EXPECT_TRUE(at.status.ok()) << at.status.error_message();
  const GenerateStream past = generate(running.stub(), tokens_request(kContext, kAnswer + 1));
  EXPECT_EQ(past.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(past.status.error_message(),
            "tokens.context_ids, max_tokens: the request's KV needs " + std::to_string((kContext + 2 + kAnswer) * per_token) +
                " bytes on rank 0, more than the " + std::to_string(options.scheduler.kv_cache_bytes) +
                " bytes per rank that running requests may reserve (--kv-cache-bytes)");
  EXPECT_TRUE(past.progress.empty()) << "refused before Phase 1";

  const CreateContextStream context = create_context(running.stub(), context_request(kContext + 1 + kAnswer + 1));
  EXPECT_EQ(context.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(context.status.error_message().rfind("ids.ids: the request's KV needs ", 0), 0u)
      << context.status.error_message();
}

// With --kv-dtype bf16 a token's KV takes half the bytes, so the same context cache holds twice the
// tokens: a context that the float32 accounting would refuse fits exactly.
TEST_F(Limits, ContextCacheCountsTheStoredKvType) {
  const v1::ModelInfo f32 = model_info(KvDType::kF32);
  const v1::ModelInfo bf16 = model_info(KvDType::kBF16);
  EXPECT_EQ(f32.kv_dtype(), "f32");
  EXPECT_EQ(bf16.kv_dtype(), "bf16");
  EXPECT_EQ(f32.kv_bytes_per_token(), 2 * f32.layers() * f32.kv_heads() * f32.head_dim() * 4);
  EXPECT_EQ(bf16.kv_bytes_per_token(), 2 * bf16.layers() * bf16.kv_heads() * bf16.head_dim() * 2);

  constexpr int64_t kBf16Tokens = 80;  // 40 float32 tokens' bytes
  server::ServerOptions options = limited(0);
  options.context_cache_bytes = kBf16Tokens / 2 * f32.kv_bytes_per_token();
  RunningServer running(model_dir(), options, grpc::InsecureChannelCredentials(), KvDType::kBF16);
  const CreateContextStream at = create_context(running.stub(), context_request(kBf16Tokens));
  ASSERT_TRUE(at.status.ok()) << at.status.error_message();
  ASSERT_TRUE(at.context.has_value());
  EXPECT_EQ(at.context->rank_bytes(0), options.context_cache_bytes) << "the context fills the cache exactly";

  const CreateContextStream past = create_context(running.stub(), context_request(kBf16Tokens + 1));
  EXPECT_EQ(past.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(past.status.error_message(), "context: its KV needs " +
                                             std::to_string((kBf16Tokens + 1) * bf16.kv_bytes_per_token()) +
                                             " bytes on rank 0, more than the context cache's " +
                                             std::to_string(options.context_cache_bytes) +
                                             " bytes per rank (--context-cache-bytes)");
}

// Starts a Generate that runs until cancelled (long answer), on a thread; returns once the server
// counts it as active.
class OpenStream {
 public:
  // forwarded_for: the client a proxy names (x-forwarded-for); empty: none.
  OpenStream(v1::StarService::Stub& stub, std::function<int32_t()> active, const std::string& forwarded_for = "") {
    const int32_t before = active();
    if (!forwarded_for.empty()) context_.AddMetadata("x-forwarded-for", forwarded_for);
    thread_ = std::thread([this, &stub] {
      v1::GenerateRequest r = text_request("", "hello", 4000);
      r.set_ignore_eos(true);
      auto reader = stub.Generate(&context_, r);
      v1::GenerateResponse response;
      while (reader->Read(&response)) {
      }
      status_ = reader->Finish();
    });
    EXPECT_TRUE(wait_for([&] { return active() > before; }));
  }
  ~OpenStream() {
    context_.TryCancel();
    thread_.join();
  }

  static bool wait_for(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

 private:
  grpc::ClientContext context_;
  std::thread thread_;
  grpc::Status status_;
};

TEST_F(Limits, StreamsPerClientAreCountedAndReleased) {
  RunningServer running(model_dir(), streams_limited(2));
  const std::function<int32_t()> active = active_requests(running);
  {
    OpenStream first(running.stub(), active);
    OpenStream second(running.stub(), active);  // at the limit: accepted
    EXPECT_EQ(active(), 2);
    const GenerateStream third = generate(running.stub(), text_request("", "hi", 1));
    EXPECT_EQ(third.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(third.status.error_message(),
              "client 127.0.0.1 already has 2 streams open, the server's limit per client (--max-streams-per-client 2)");
    const CreateContextStream fourth = create_context(running.stub(), context_request(4));
    EXPECT_EQ(fourth.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  ASSERT_TRUE(OpenStream::wait_for([&] { return active() == 0; }));
  const GenerateStream after = generate(running.stub(), text_request("", "hi", 1));
  EXPECT_TRUE(after.status.ok()) << "closed streams give their slots back: " << after.status.error_message();
}

TEST_F(Limits, ATrustedProxysClientsEachHaveTheirOwnStreams) {
  RunningServer running(model_dir(), streams_limited(1));  // trusts 127.0.0.1, where these calls come from
  OpenStream first(running.stub(), active_requests(running), "10.0.0.1");
  const GenerateStream other = generate(running.stub(), text_request("", "hi", 1), {.forwarded_for = "10.0.0.2"});
  EXPECT_TRUE(other.status.ok()) << other.status.error_message();
  const GenerateStream proxy = generate(running.stub(), text_request("", "hi", 1));
  EXPECT_TRUE(proxy.status.ok()) << "the proxy's own calls count for it: " << proxy.status.error_message();
  const GenerateStream same = generate(running.stub(), text_request("", "hi", 1), {.forwarded_for = "10.0.0.1"});
  EXPECT_EQ(same.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(same.status.error_message(),
            "client 10.0.0.1 already has 1 streams open, the server's limit per client (--max-streams-per-client 1)");
}

TEST_F(Limits, AnUntrustedPeerCannotNameAnotherClient) {
  server::ServerOptions options = streams_limited(1);
  options.forwarded_allow_ips = {"10.9.9.9"};
  RunningServer running(model_dir(), options);
  OpenStream first(running.stub(), active_requests(running), "10.0.0.1");
  const GenerateStream other = generate(running.stub(), text_request("", "hi", 1), {.forwarded_for = "10.0.0.2"});
  EXPECT_EQ(other.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(other.status.error_message(),
            "client 127.0.0.1 already has 1 streams open, the server's limit per client (--max-streams-per-client 1)");
}

TEST_F(Limits, AFailedServerAnswersEveryRequestUnavailable) {
  server::ServerOptions options;
  options.default_max_tokens = 4000;
  RunningServer running(model_dir(), options);
  std::atomic<bool> streaming{false};
  GenerateStream running_call;
  std::thread caller([&] {
    v1::GenerateRequest r = text_request("", "hello", 4000);
    r.set_ignore_eos(true);
    running_call = generate(running.stub(), r, {}, [&](const GenerateStream&, grpc::ClientContext&) { streaming = true; });
  });
  ASSERT_TRUE(OpenStream::wait_for([&] { return streaming.load(); }));
  running.server().fail("rank 1 (pid 42) is lost: a test says so", std::chrono::seconds(5));
  caller.join();

  const std::string why = "the server cannot serve any more: rank 1 (pid 42) is lost: a test says so";
  EXPECT_EQ(running_call.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(running_call.status.error_message(), why);
  EXPECT_FALSE(running_call.done.has_value());
  EXPECT_EQ(running.health(), Health::NOT_SERVING);
  const GenerateStream later = generate(running.stub(), text_request("", "hi", 1));
  EXPECT_EQ(later.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(later.status.error_message(), why);
}

}  // namespace
}  // namespace star::testing
