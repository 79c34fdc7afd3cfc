// A worker rank lost while `mpirun -np 2 star-server` serves a long request: killed (kill -9)
// during Phase 1 or during decoding, or stopped (SIGSTOP) so that it falls silent. Rank 0 must
// notice within the 5 seconds, name the rank, end the request with UNAVAILABLE (a status
// the server sends, not a broken connection), and the whole job must exit non-zero.
// A slow step on a rank (Phase 1 far longer than --rank-timeout) must not count as a loss.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "e2e_fixture.h"
#include "support/server_process.h"
#include "support/spawn_logged.h"
#include "support/temp_dir.h"

namespace star::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The bound, with margin for a loaded CI machine taken off it rather than added.
constexpr auto kReportBound = std::chrono::seconds(5);
constexpr auto kExitBound = std::chrono::seconds(20);

// A tiny model with room for a context long enough that Phase 1 and decoding each last seconds.
class LongModel {
 public:
  LongModel() {
    const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + path().string() +
                             " --preset tiny --seed 5 --max-positions 32768 >/dev/null";
    ok_ = std::system(make.c_str()) == 0;
  }
  bool ok() const { return ok_; }
  std::filesystem::path path() const { return dir_.path() / "model"; }

 private:
  TempDir dir_;
  bool ok_ = false;
};

const LongModel& long_model() {
  static const LongModel model;
  return model;
}

// ~12K tokens: Phase 1 of it takes seconds on one core per rank.
const std::string& long_context() {
  static const std::string text = context_text(300, "rivers");
  return text;
}

enum class When { kPhase1, kDecode };

struct Outcome {
  grpc::Status status;
  bool acted = false;
  int chunks_before = 0;    // token chunks received before the fault
  int progress_before = 0;  // Phase 1 progress messages received before the fault
  SteadyClock::duration fault_to_status{};
};

// Streams a long request and calls `fault` once: at the first Phase 1 progress message, or
// after a few token chunks.
Outcome stream_with_fault(ServerProcess& server, When when, const std::function<void()>& fault) {
  auto stub = v1::StarService::NewStub(server.channel());
  v1::GenerateRequest request = text_request(long_context(), "Which river?", 16000);
  request.set_ignore_eos(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  auto reader = stub->Generate(&context, request);
  Outcome out;
  int chunks = 0;
  int progress = 0;
  SteadyClock::time_point fault_at;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    progress += response.has_progress();
    chunks += response.has_chunk();
    const bool now = when == When::kPhase1 ? progress >= 1 : chunks >= 5;
    if (now && !out.acted) {
      out.acted = true;
      out.chunks_before = chunks;
      out.progress_before = progress;
      fault_at = SteadyClock::now();
      fault();
    }
  }
  out.status = reader->Finish();
  out.fault_to_status = SteadyClock::now() - fault_at;
  return out;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

struct FaultCase {
  const char* name;
  When when;
  int signal_number;
  const char* log_says;  // what rank 0 logs about rank 1
};

class RankFailure : public ::testing::TestWithParam<FaultCase> {};

TEST_P(RankFailure, RankZeroReportsItAndEveryProcessExits) {
  const FaultCase& c = GetParam();
  ASSERT_TRUE(long_model().ok()) << "star-mkmodel failed";
  ServerProcess server(long_model().path(), 2,
                       {"--block-size", "1024", "--rank-timeout", "1", "--max-tokens-limit", "16000"});
  ASSERT_TRUE(server.ready()) << server.log();
  ASSERT_EQ(server.rank_pids().size(), 2u) << "--port-file lists every rank's pid";
  const pid_t worker = server.rank_pids()[1];

  const Outcome out = stream_with_fault(server, c.when, [&] { ::kill(worker, c.signal_number); });
  ASSERT_TRUE(out.acted) << "the request ended before the fault: " << out.status.error_message();
  if (c.when == When::kPhase1) {
    EXPECT_EQ(out.chunks_before, 0) << "Phase 1 was over before the kill; lengthen the context";
  } else {
    EXPECT_GT(out.chunks_before, 0);
  }
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::UNAVAILABLE) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("rank 1 (pid " + std::to_string(worker) + ")"), std::string::npos)
      << out.status.error_message();
  EXPECT_LT(out.fault_to_status, kReportBound)
      << std::chrono::duration<double>(out.fault_to_status).count() << " s from the fault to the client's status";

  const auto fault_seen = SteadyClock::now();
  const int exit_code = server.wait_exit(kExitBound);
  std::printf("%s: the client's status came %.3f s after the fault; mpirun exited (code %d) %.3f s after that\n",
              c.name, std::chrono::duration<double>(out.fault_to_status).count(), exit_code,
              std::chrono::duration<double>(SteadyClock::now() - fault_seen).count());
  if (exit_code == ServerProcess::kRunning) ::kill(worker, SIGKILL);
  EXPECT_NE(exit_code, ServerProcess::kRunning) << "mpirun still runs\n" << server.log();
  EXPECT_NE(exit_code, 0) << "a supervisor must see the failure";
  for (pid_t pid : server.rank_pids()) {
    EXPECT_TRUE(wait_until([&] { return process_gone(pid); }, std::chrono::seconds(5))) << "pid " << pid << " still runs";
  }
  const std::string log = server.log();
  EXPECT_NE(log.find("rank 1 (pid " + std::to_string(worker) + ") is lost: " + c.log_says), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, RankFailure,
    ::testing::Values(FaultCase{"KilledDuringPhase1", When::kPhase1, SIGKILL, "its heartbeat connection closed"},
                      FaultCase{"KilledDuringDecode", When::kDecode, SIGKILL, "its heartbeat connection closed"},
                      FaultCase{"StoppedDuringDecode", When::kDecode, SIGSTOP, "no heartbeat for"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return std::string(info.param.name); });

// Rank 0 frozen (SIGSTOP) while star-client, with no deadline, streams an answer: the worker stops
// hearing rank 0's heartbeat, says so and exits non-zero within --rank-timeout, mpirun ends the
// job (the stopped rank 0 included), and the client's call fails instead of waiting forever.
TEST(RankFailure, AFrozenRankZeroIsDetectedByTheWorkers) {
  ASSERT_TRUE(long_model().ok()) << "star-mkmodel failed";
  ServerProcess server(long_model().path(), 2, {"--rank-timeout", "1", "--max-tokens-limit", "16000"});
  ASSERT_TRUE(server.ready()) << server.log();
  ASSERT_EQ(server.rank_pids().size(), 2u);
  const pid_t rank0 = server.rank_pids()[0];
  const pid_t worker = server.rank_pids()[1];

  TempDir scratch;
  const std::filesystem::path client_log = scratch.path() / "client.log";
  const pid_t client = spawn_logged({STAR_CLIENT_PATH, "--server", server.address(), "generate", "--query",
                                     "Tell a long story", "--max-tokens", "16000", "--ignore-eos"},
                                    client_log);
  ASSERT_GT(client, 0);
  auto stub = v1::StarService::NewStub(server.channel());
  auto active = [&] {
    grpc::ClientContext context;
    v1::ServerInfo info;
    return stub->GetServerInfo(&context, {}, &info).ok() ? info.active_requests() : -1;
  };
  ASSERT_TRUE(wait_until([&] { return active() == 1; }, std::chrono::seconds(30))) << "the client's call never started";

  ASSERT_EQ(::kill(rank0, SIGSTOP), 0);
  const auto stopped = SteadyClock::now();
  const int exit_code = server.wait_exit(kExitBound);
  const double job_seconds = std::chrono::duration<double>(SteadyClock::now() - stopped).count();
  int client_status = 0;
  bool client_reaped = false;  // waitpid reaps once: the predicate must remember it
  const bool client_done = wait_until(
      [&] { return client_reaped = client_reaped || ::waitpid(client, &client_status, WNOHANG) == client; },
      std::chrono::seconds(20));
  const double client_seconds = std::chrono::duration<double>(SteadyClock::now() - stopped).count();
  std::printf("frozen rank 0: mpirun exited (code %d) %.3f s after SIGSTOP; the client ended %.3f s after it\n",
              exit_code, job_seconds, client_seconds);
  if (exit_code == ServerProcess::kRunning || !client_done) {
    ::kill(rank0, SIGCONT);  // let the test's clean-up end what is left
    ::kill(worker, SIGKILL);
    if (!client_done) ::kill(client, SIGKILL);
  }
  EXPECT_NE(exit_code, ServerProcess::kRunning) << "mpirun still runs\n" << server.log();
  EXPECT_NE(exit_code, 0) << "a supervisor must see the failure";
  for (pid_t pid : server.rank_pids()) {
    EXPECT_TRUE(wait_until([&] { return process_gone(pid); }, std::chrono::seconds(5))) << "pid " << pid << " still runs";
  }
  EXPECT_TRUE(client_done) << "star-client without a deadline still waits";
  if (client_done) EXPECT_NE(WEXITSTATUS(client_status), 0) << "a cut answer is no success";
  EXPECT_NE(server.log().find("rank 0 is lost: no heartbeat for"), std::string::npos) << server.log();
}

// Open MPI writes to a dead rank's socket without MSG_NOSIGNAL: the SIGPIPE that follows must not
// end a rank before rank 0 has told its clients which rank was lost (it did, now and then, when a
// worker was killed during Phase 1). Every rank takes a SIGPIPE here and the server keeps serving.
TEST(RankFailure, ASigpipeEndsNoRank) {
  ASSERT_TRUE(long_model().ok()) << "star-mkmodel failed";
  ServerProcess server(long_model().path(), 2, {"--rank-timeout", "1"});
  ASSERT_TRUE(server.ready()) << server.log();
  ASSERT_EQ(server.rank_pids().size(), 2u);
  for (pid_t pid : server.rank_pids()) ASSERT_EQ(::kill(pid, SIGPIPE), 0);
  auto stub = v1::StarService::NewStub(server.channel());
  const GenerateStream out = generate(*stub, text_request(context_text(20, "rivers"), "Which river?", 4));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message() << "\n" << server.log();
  ASSERT_TRUE(out.done.has_value());
  EXPECT_EQ(out.done->usage().completion_tokens(), 4);
  for (pid_t pid : server.rank_pids()) EXPECT_FALSE(process_gone(pid)) << "pid " << pid << "\n" << server.log();
}

// A step that outlasts --step-timeout ends the job as a lost rank does: the request ends with
// UNAVAILABLE naming the step and the flag, and the job exits non-zero. A step that hangs is seen
// the same way; here the step is one whole block's Phase 1 (--max-num-batched-tokens 0), which
// takes far longer than the 0.1 s allowed.
TEST(StepTimeout, AStepPastItEndsTheJob) {
  ASSERT_TRUE(long_model().ok()) << "star-mkmodel failed";
  ServerProcess server(long_model().path(), 2,
                       {"--step-timeout", "0.1", "--max-num-batched-tokens", "0", "--rank-timeout", "30"});
  ASSERT_TRUE(server.ready()) << server.log();
  auto stub = v1::StarService::NewStub(server.channel());
  const GenerateStream out = generate(*stub, text_request(long_context(), "Which river?", 8));
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::UNAVAILABLE) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("past --step-timeout 0.100 s"), std::string::npos)
      << out.status.error_message();
  const int exit_code = server.wait_exit(kExitBound);
  EXPECT_NE(exit_code, ServerProcess::kRunning) << "mpirun still runs\n" << server.log();
  EXPECT_NE(exit_code, 0) << "a supervisor must see the failure";
  EXPECT_NE(server.log().find("past --step-timeout 0.100 s"), std::string::npos) << server.log();
}

// One block per rank: each rank's single Phase 1 step takes far longer than --rank-timeout, and
// the request still completes, because the heartbeat runs beside the computation (and a generous
// --step-timeout lets it be).
TEST(RankHeartbeat, LongPhase1StepIsNotALoss) {
  ASSERT_TRUE(long_model().ok()) << "star-mkmodel failed";
  ServerProcess server(long_model().path(), 2, {"--rank-timeout", "0.5", "--step-timeout", "120"});
  ASSERT_TRUE(server.ready()) << server.log();
  auto stub = v1::StarService::NewStub(server.channel());
  const GenerateStream out = generate(*stub, text_request(long_context(), "Which river?", 8));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message() << "\n" << server.log();
  ASSERT_TRUE(out.done.has_value());
  EXPECT_GT(out.done->timings().phase1_seconds(), 0.5) << "Phase 1 must outlast --rank-timeout for this test to mean anything";
  EXPECT_EQ(out.done->usage().completion_tokens(), 8);
  EXPECT_EQ(server.log().find("is lost"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace star::testing
