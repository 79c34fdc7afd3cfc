// The rules a request meets on the server, in this process on one rank: an unset seed draws a
// fresh one and reports it (the same rule as the OpenAI shim's); max_tokens errors name the field
// the client can change, and the server's default shrinks to the room left; health knows the
// service by name; requests cut by the shutdown end UNAVAILABLE, never CANCELLED or with an answer.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "support/running_server.h"
#include "support/star_calls.h"
#include "support/temp_dir.h"

namespace star::testing {
namespace {

using Health = grpc::health::v1::HealthCheckResponse;

class RequestRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const std::string make =
        std::string(STAR_MKMODEL_PATH) + " --out " + model_dir().string() + " --preset tiny --seed 8 >/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::filesystem::path model_dir() { return dir_->path() / "model"; }

  static v1::GenerateRequest sampled(uint64_t max_tokens) {
    v1::GenerateRequest r;
    r.mutable_text()->set_query("Once upon a time");
    r.set_max_tokens(static_cast<int64_t>(max_tokens));
    r.set_ignore_eos(true);
    r.mutable_sampling()->set_temperature(1.0f);
    return r;
  }

  static v1::GenerateRequest tokens(int64_t context, int64_t max_tokens) {
    v1::GenerateRequest r;
    for (int64_t i = 0; i < context; ++i) r.mutable_tokens()->add_context_ids(static_cast<int32_t>(1 + i % 200));
    r.mutable_tokens()->add_query_ids(7);
    r.set_max_tokens(max_tokens);
    return r;
  }

  static inline TempDir* dir_ = nullptr;
};

TEST_F(RequestRules, AnUnsetSeedIsDrawnPerRequestReportedAndReplays) {
  RunningServer running(model_dir(), {});
  std::set<uint64_t> seeds;
  std::vector<GenerateStream> answers;
  for (int i = 0; i < 4; ++i) {
    answers.push_back(generate(running.stub(), sampled(24)));
    ASSERT_TRUE(answers.back().status.ok()) << answers.back().status.error_message();
    ASSERT_TRUE(answers.back().done.has_value());
    seeds.insert(answers.back().done->seed());
  }
  // Four draws from 2^64: equal ones would mean the seed is fixed, as seed 0 used to be.
  EXPECT_EQ(seeds.size(), 4u);

  // The reported seed replays the answer token for token.
  for (const GenerateStream& answer : answers) {
    v1::GenerateRequest replay = sampled(24);
    replay.mutable_sampling()->set_seed(answer.done->seed());
    const GenerateStream again = generate(running.stub(), replay);
    ASSERT_TRUE(again.status.ok());
    EXPECT_EQ(again.token_ids, answer.token_ids);
    EXPECT_EQ(again.done->seed(), answer.done->seed());
  }

  // A seed the client sets, 0 included, is used as given.
  v1::GenerateRequest zero = sampled(8);
  zero.mutable_sampling()->set_seed(0);
  const GenerateStream first = generate(running.stub(), zero), second = generate(running.stub(), zero);
  EXPECT_EQ(first.done->seed(), 0u);
  EXPECT_EQ(first.token_ids, second.token_ids);
}

TEST_F(RequestRules, MaxTokensErrorsNameTheFieldTheClientCanChange) {
  server::ServerOptions options;
  options.limits.max_tokens = std::numeric_limits<int64_t>::max();
  RunningServer running(model_dir(), options);

  // The client's own max_tokens, up to 2^63 - 1, is reported as sent.
  const GenerateStream huge = generate(running.stub(), tokens(10, std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(huge.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(huge.status.error_message(),
            "max_tokens: 10 context + 1 query + 9223372036854775807 max_tokens exceed the model's 4096 positions");

  // Without max_tokens, the server's default (128) shrinks to the room left: 4096 - 4090 - 1.
  const GenerateStream nearly_full = generate(running.stub(), [] {
    v1::GenerateRequest r = tokens(4090, 0);
    r.set_ignore_eos(true);
    return r;
  }());
  ASSERT_TRUE(nearly_full.status.ok()) << nearly_full.status.error_message();
  EXPECT_EQ(nearly_full.done->usage().completion_tokens(), 5);
  EXPECT_EQ(nearly_full.done->finish_reason(), v1::FINISH_REASON_LENGTH);

  // A prompt that leaves no room is the prompt's fault, not a max_tokens the client never sent.
  const GenerateStream full = generate(running.stub(), tokens(4095, 0));
  EXPECT_EQ(full.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(full.status.error_message(),
            "tokens.context_ids: 4095 context + 1 query tokens leave no room for an answer in the model's 4096 "
            "positions");
}

TEST_F(RequestRules, HealthKnowsTheServiceByName) {
  RunningServer running(model_dir(), {});
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(running.server().port()),
                                     grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  auto check = [&](const std::string& service, Health& response) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    return health->Check(&context, request, &response);
  };
  for (const std::string service : {"", "star.v1.StarService"}) {
    Health response;
    const grpc::Status status = check(service, response);
    ASSERT_TRUE(status.ok()) << "'" << service << "': " << status.error_message();
    EXPECT_EQ(response.status(), Health::SERVING) << "'" << service << "'";
  }
  Health unknown;
  EXPECT_EQ(check("star.v1.NoSuchService", unknown).error_code(), grpc::StatusCode::NOT_FOUND);

  running.server().begin_shutdown();
  Health stopping;
  ASSERT_TRUE(check("star.v1.StarService", stopping).ok());
  EXPECT_EQ(stopping.status(), Health::NOT_SERVING);
}

// Past --shutdown-timeout: the request running, a Generate and a CreateContext still queued behind
// it all end UNAVAILABLE ("shutting down"), with no final answer.
TEST_F(RequestRules, RequestsCutByTheShutdownEndUnavailable) {
  server::ServerOptions options;
  // Far shorter than the long answer takes, however fast the engine steps.
  options.shutdown_timeout = std::chrono::milliseconds(50);
  options.scheduler.max_num_seqs = 1;  // the later requests wait behind the long answer
  RunningServer running(model_dir(), options);
  std::atomic<bool> streaming{false};
  GenerateStream in_flight, queued;
  CreateContextStream queued_context;
  std::thread first([&] {
    v1::GenerateRequest r = tokens(10, 4000);
    r.set_ignore_eos(true);
    in_flight = generate(running.stub(), r, {}, [&](const GenerateStream&, grpc::ClientContext&) { streaming = true; });
  });
  while (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::thread second([&] { queued = generate(running.stub(), tokens(10, 4)); });
  std::thread third([&] {
    v1::CreateContextRequest r;
    r.set_text("A context that waits behind a long answer.");
    queued_context = create_context(running.stub(), r);
  });
  auto queued_requests = [&] {
    grpc::ClientContext context;
    v1::ServerInfo info;
    EXPECT_TRUE(running.stub().GetServerInfo(&context, {}, &info).ok());
    return info.queued_requests();
  };
  while (queued_requests() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  running.server().begin_shutdown();
  first.join();
  second.join();
  third.join();

  for (const grpc::Status* status : {&in_flight.status, &queued.status, &queued_context.status}) {
    EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAVAILABLE) << status->error_message();
    EXPECT_NE(status->error_message().find("shutting down"), std::string::npos) << status->error_message();
  }
  EXPECT_FALSE(in_flight.done.has_value()) << "a cut answer must not look finished";
  EXPECT_FALSE(queued.done.has_value());
  EXPECT_FALSE(queued_context.context.has_value());
  EXPECT_TRUE(running.stop().ok());
}

}  // namespace
}  // namespace star::testing
