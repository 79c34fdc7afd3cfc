// Must show 6: health is SERVING once the model is loaded and NOT_SERVING while shutting down;
// SIGTERM lets the request in flight finish, refuses new ones, and ends every rank with exit 0.
// Past --shutdown-timeout, what still runs is cut: UNAVAILABLE, with no final answer.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "e2e_fixture.h"

namespace star::testing {
namespace {

using Health = grpc::health::v1::HealthCheckResponse;

class Shutdown : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system((std::string(STAR_MKMODEL_PATH) + " --out " + (dir_.path() / "m").string() +
                           " --preset tiny --seed 6 >/dev/null").c_str()),
              0);
  }

  static v1::GenerateRequest long_generation(int64_t tokens) {
    v1::GenerateRequest r = text_request("", "Tell a long story", tokens);
    r.set_ignore_eos(true);
    return r;
  }

  TempDir dir_;
};

TEST_F(Shutdown, SigtermFinishesTheRequestInFlightAndEveryRankExitsZero) {
  ServerProcess server(dir_.path() / "m", 2, {"--shutdown-timeout", "60"});
  ASSERT_TRUE(server.ready()) << server.log();
  EXPECT_EQ(server.health(), Health::SERVING);
  auto stub = v1::StarService::NewStub(server.channel());

  constexpr int64_t kTokens = 3000;
  std::atomic<bool> started{false}, finished{false};
  GenerateStream in_flight;
  std::thread caller([&] {
    in_flight = generate(*stub, long_generation(kTokens), {}, [&](const GenerateStream&, grpc::ClientContext&) {
      started = true;
    });
    finished = true;
  });
  EXPECT_TRUE(wait_until([&] { return started.load(); }));
  server.signal_rank0(SIGTERM);

  wait_until([&] { return server.health() == Health::NOT_SERVING; }, std::chrono::seconds(5));
  const bool seen_while_running = !finished;
  EXPECT_EQ(server.health(), Health::NOT_SERVING);
  GenerateStream refused = generate(*stub, text_request("", "Too late", 4));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.status.error_message().find("shutting down"), std::string::npos);
  EXPECT_TRUE(seen_while_running) << "the request should still have been running";

  caller.join();
  ASSERT_TRUE(in_flight.status.ok()) << in_flight.status.error_message();
  EXPECT_EQ(in_flight.done->finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(in_flight.done->usage().completion_tokens(), kTokens);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(20)), 0) << server.log();
}

TEST_F(Shutdown, PastTheTimeoutTheRequestIsCancelled) {
  ServerProcess server(dir_.path() / "m", 2, {"--shutdown-timeout", "0.3"});
  ASSERT_TRUE(server.ready()) << server.log();
  auto stub = v1::StarService::NewStub(server.channel());
  std::chrono::steady_clock::time_point signalled;
  GenerateStream s = generate(*stub, long_generation(3000), {}, [&](const GenerateStream&, grpc::ClientContext&) {
    if (signalled.time_since_epoch().count() != 0) return;
    signalled = std::chrono::steady_clock::now();
    server.signal_rank0(SIGTERM);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::UNAVAILABLE) << s.status.error_message();
  EXPECT_NE(s.status.error_message().find("shutting down"), std::string::npos) << s.status.error_message();
  EXPECT_FALSE(s.done.has_value()) << "a cut answer ends with the status alone, never a finish";
  EXPECT_LT(s.token_ids.size(), 3000u);
  EXPECT_GT(seconds, 0.29);
  EXPECT_LT(seconds, 0.3 + 0.5);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(20)), 0) << server.log();
}

}  // namespace
}  // namespace star::testing
