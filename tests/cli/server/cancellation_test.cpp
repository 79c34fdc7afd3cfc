// Must show 4: a client cancel, a passed deadline and Abort each stop a long generation within one
// decode step plus 100 ms, and the next request runs normally. (Each stops the generation after its
// first tokens arrived, so these also show that the text streams.)
//
// How long the ranks kept going after the stop is read from the next request: it waits in the
// queue (timings.queue_seconds) exactly until the engine is free again.
#include <gtest/gtest.h>

#include <thread>

#include "e2e_fixture.h"

namespace star::testing {
namespace {

constexpr int64_t kLongTokens = 3000;

v1::GenerateRequest long_generation(const std::string& request_id = "") {
  v1::GenerateRequest r = text_request(context_text(2, "a long answer"), "Go on forever", kLongTokens);
  r.set_ignore_eos(true);
  r.set_request_id(request_id);
  return r;
}

class Cancellation : public E2E {
 protected:
  void SetUp() override {
    E2E::SetUp();
    // One decode step, measured on this server now.
    GenerateStream s = generate(stub(), [] {
      v1::GenerateRequest r = long_generation();
      r.set_max_tokens(200);
      return r;
    }(), with_key());
    ASSERT_TRUE(s.status.ok()) << s.status.error_message();
    step_seconds_ = s.done->timings().decode_seconds() / static_cast<double>(s.done->usage().completion_tokens() - 1);
    next_ = text_request(context_text(3, "the next request"), "Still there?", 8);
    GenerateStream alone = generate(stub(), next_, with_key());
    ASSERT_TRUE(alone.status.ok());
    next_text_ = alone.text;
  }

  // The request after the stopped one: answered normally; returns how long it waited for the ranks.
  double run_next() {
    GenerateStream s = generate(stub(), next_, with_key());
    EXPECT_TRUE(s.status.ok()) << s.status.error_message();
    EXPECT_EQ(s.text, next_text_);
    return s.done ? s.done->timings().queue_seconds() : 1e9;
  }

  double limit() const { return step_seconds_ + 0.1; }

  double step_seconds_ = 0;
  v1::GenerateRequest next_;
  std::string next_text_;
};

TEST_F(Cancellation, ClientCancelStopsTheGeneration) {
  GenerateStream s = generate(stub(), long_generation(), with_key(), [](const GenerateStream& so_far, grpc::ClientContext& c) {
    if (so_far.token_ids.size() >= 10) c.TryCancel();
  });
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::CANCELLED);
  const double waited = run_next();
  std::printf("[ measured ] cancel: the ranks were free %.1f ms after the client cancelled (decode step %.2f ms)\n",
              waited * 1e3, step_seconds_ * 1e3);
  EXPECT_LT(waited, limit());
}

TEST_F(Cancellation, DeadlineStopsTheGeneration) {
  const auto start = std::chrono::steady_clock::now();
  GenerateStream s = generate(stub(), long_generation(), with_key(std::chrono::milliseconds(300)));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_GT(s.chunks, 0) << "the generation had started before the deadline";
  EXPECT_LT(elapsed, 0.3 + limit());
  const double waited = run_next();
  std::printf("[ measured ] deadline: the ranks were free %.1f ms after the deadline's stream ended\n", waited * 1e3);
  EXPECT_LT(waited, limit());
}

TEST_F(Cancellation, AbortStopsTheGeneration) {
  std::chrono::steady_clock::time_point aborted;
  GenerateStream s = generate(stub(), long_generation("to-abort"), with_key(),
                              [&](const GenerateStream& so_far, grpc::ClientContext&) {
                                if (so_far.token_ids.size() < 10 || aborted.time_since_epoch().count() != 0) return;
                                // Abort comes from another client, as it would in practice.
                                auto channel = grpc::CreateChannel(server().address(), grpc::InsecureChannelCredentials());
                                v1::AbortRequest request;
                                request.set_request_id("to-abort");
                                v1::AbortResponse response;
                                auto context = make_context(with_key());
                                aborted = std::chrono::steady_clock::now();
                                EXPECT_TRUE(v1::StarService::NewStub(channel)->Abort(context.get(), request, &response).ok());
                              });
  const double to_end = std::chrono::duration<double>(std::chrono::steady_clock::now() - aborted).count();
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  ASSERT_TRUE(s.done.has_value());
  EXPECT_EQ(s.done->finish_reason(), v1::FINISH_REASON_CANCELLED);
  EXPECT_LT(s.done->usage().completion_tokens(), kLongTokens);
  EXPECT_EQ(static_cast<size_t>(s.done->usage().completion_tokens()), s.token_ids.size());
  std::printf("[ measured ] abort: the stream ended %.1f ms after Abort (decode step %.2f ms)\n", to_end * 1e3,
              step_seconds_ * 1e3);
  EXPECT_LT(to_end, limit());
  EXPECT_LT(run_next(), limit());
}

}  // namespace
}  // namespace star::testing
