// Must show 3: 16 concurrent clients with 5 requests each are all answered, each with the text the
// same request gets alone; a full queue answers RESOURCE_EXHAUSTED.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "e2e_fixture.h"

namespace star::testing {
namespace {

constexpr int kClients = 16;
constexpr int kRequestsPerClient = 5;
constexpr int kDistinct = 8;

v1::GenerateRequest distinct_request(int i) {
  return text_request(context_text(3 + i % 4, "request " + std::to_string(i)), "Tell me about line " + std::to_string(i),
                      12, i % 2 == 0 ? 0.f : 0.7f, static_cast<uint64_t>(i));
}

TEST_F(E2E, SixteenClientsFiveRequestsEachAllAnsweredCorrectly) {
  std::vector<std::string> expected(kDistinct);
  for (int i = 0; i < kDistinct; ++i) {
    GenerateStream alone = generate(stub(), distinct_request(i), with_key());
    ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
    expected[i] = alone.text;
  }

  std::atomic<int> answered{0}, correct{0};
  std::atomic<int64_t> tokens{0};
  std::vector<std::string> failures(kClients);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      // Each client has its own channel, as separate applications would.
      auto channel = grpc::CreateChannel(server().address(), grpc::InsecureChannelCredentials());
      auto client_stub = v1::StarService::NewStub(channel);
      for (int r = 0; r < kRequestsPerClient; ++r) {
        const int which = (c * kRequestsPerClient + r) % kDistinct;
        GenerateStream s = generate(*client_stub, distinct_request(which), with_key());
        if (!s.status.ok()) {
          failures[c] += s.status.error_message() + "; ";
          continue;
        }
        ++answered;
        tokens += s.done->usage().completion_tokens();
        if (s.text == expected[which]) ++correct;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
  EXPECT_EQ(answered.load(), kClients * kRequestsPerClient);
  EXPECT_EQ(correct.load(), kClients * kRequestsPerClient);
  std::printf("[ measured ] %d requests from %d clients in %.2f s: %.1f requests/s, %.0f generated tokens/s\n",
              kClients * kRequestsPerClient, kClients, seconds, kClients * kRequestsPerClient / seconds,
              static_cast<double>(tokens.load()) / seconds);
  RecordProperty("requests_per_second", std::to_string(kClients * kRequestsPerClient / seconds));
}

int32_t queued_requests(v1::StarService::Stub& stub) {
  v1::ServerInfo info;
  auto context = make_context({});
  if (!stub.GetServerInfo(context.get(), {}, &info).ok()) return -1;
  return info.queued_requests();
}

bool abort_request(v1::StarService::Stub& stub, const std::string& id) {
  v1::AbortRequest request;
  request.set_request_id(id);
  v1::AbortResponse response;
  auto context = make_context({});
  return stub.Abort(context.get(), request, &response).ok();
}

TEST(E2EQueue, AFullQueueAnswersResourceExhausted) {
  TempDir dir;
  ASSERT_EQ(std::system((std::string(STAR_MKMODEL_PATH) + " --out " + (dir.path() / "m").string() +
                         " --preset tiny --seed 4 >/dev/null").c_str()),
            0);
  // One request runs at a time, so that the others wait in the queue.
  ServerProcess server(dir.path() / "m", 2, {"--queue-size", "2", "--max-num-seqs", "1"});
  ASSERT_TRUE(server.ready()) << server.log();
  auto stub = v1::StarService::NewStub(server.channel());

  // One long generation runs; two more wait in the queue, which then is full.
  auto long_request = [](const std::string& id) {
    v1::GenerateRequest r = text_request("", "Count on and on", 4000);
    r.set_ignore_eos(true);
    r.set_request_id(id);
    return r;
  };
  std::atomic<bool> running{false};
  std::vector<GenerateStream> results(3);
  std::vector<std::thread> callers;
  callers.emplace_back([&] {
    results[0] = generate(*stub, long_request("running"), {}, [&](const GenerateStream&, grpc::ClientContext&) {
      running = true;
    });
  });
  const bool started = wait_until([&] { return running.load(); });
  for (int i = 1; i <= 2; ++i) {
    callers.emplace_back([&, i] { results[i] = generate(*stub, long_request("queued-" + std::to_string(i))); });
  }
  const bool filled = wait_until([&] { return queued_requests(*stub) == 2; });
  EXPECT_TRUE(started && filled) << "one request should run and two wait";

  GenerateStream refused = generate(*stub, text_request("", "One more", 4));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.status.error_message().find("queue is full"), std::string::npos);

  for (const char* id : {"queued-1", "queued-2", "running"}) EXPECT_TRUE(abort_request(*stub, id)) << id;
  for (std::thread& t : callers) t.join();
  for (const GenerateStream& r : results) {
    EXPECT_TRUE(r.status.ok()) << r.status.error_message();
    ASSERT_TRUE(r.done.has_value());
    EXPECT_EQ(r.done->finish_reason(), v1::FINISH_REASON_CANCELLED);
  }
  EXPECT_EQ(results[1].done->usage().completion_tokens(), 0) << "a queued request never ran";
  EXPECT_TRUE(generate(*stub, text_request("", "After the queue emptied", 4)).status.ok());
}

}  // namespace
}  // namespace star::testing
