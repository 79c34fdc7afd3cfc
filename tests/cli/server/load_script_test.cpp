// scripts/load/load_test.py against `mpirun -np 2 star-server` (it starts its own): a short run
// where every answer must equal the same request's answer alone, and one with a queue of 1 where
// the overflow must be refused with RESOURCE_EXHAUSTED and nothing lost, and one with short and
// long contexts under a block size. The long run (32 clients x 50 requests) is the README's command.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e_fixture.h"

namespace star::testing {
namespace {

constexpr int kClients = 8;
constexpr int kRequests = 6;

nlohmann::json run_load(const std::string& extra, int& exit_code) {
  const TempDir dir;
  const std::filesystem::path report = dir.path() / "report.json";
  const std::string build = std::filesystem::path(STAR_SERVER_PATH).parent_path().string();
  const CommandResult r = run_command("/usr/bin/python3 " + std::string(STAR_SOURCE_DIR) +
                                      "/scripts/load/load_test.py --launch --build " + build + " --clients " +
                                      std::to_string(kClients) + " --requests " + std::to_string(kRequests) +
                                      " --max-tokens 8 --timeout 120 --json " + report.string() + " " + extra);
  exit_code = r.exit_code;
  std::ifstream in(report);
  if (!in) return {};
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

class LoadScript : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run_command("/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null").exit_code != 0) {
      GTEST_SKIP() << "python3-grpcio is not installed";
    }
  }
};

TEST_F(LoadScript, EveryAnswerIsCompleteAndCorrect) {
  int exit_code = -1;
  const nlohmann::json report = run_load("", exit_code);
  ASSERT_TRUE(report.is_object()) << "no report";
  EXPECT_EQ(exit_code, 0) << report.dump();
  EXPECT_EQ(report["ok"], kClients * kRequests) << report.dump();
  EXPECT_EQ(report["lost"], 0);
  EXPECT_EQ(report["wrong"], 0);
}

TEST_F(LoadScript, QueueOverflowIsRefusedNeverLost) {
  int exit_code = -1;
  const nlohmann::json report = run_load("--server-arg=--queue-size=1 --expect-rejections", exit_code);
  ASSERT_TRUE(report.is_object()) << "no report";
  EXPECT_EQ(exit_code, 0) << report.dump();
  EXPECT_GT(report["rejected"].get<int>(), 0) << report.dump();
  EXPECT_GT(report["ok"].get<int>(), 0) << report.dump();
  EXPECT_EQ(report["ok"].get<int>() + report["rejected"].get<int>(), kClients * kRequests) << report.dump();
  EXPECT_EQ(report["wrong"], 0);
}

// Star with 512-token blocks on 2 ranks, contexts from none to several blocks: the short ones have
// fewer blocks than ranks and must be answered like the long ones, under load, every answer equal
// to the same request's answer alone.
TEST_F(LoadScript, MixedContextsUnderABlockSizeAreAllAnswered) {
  int exit_code = -1;
  const nlohmann::json report = run_load("--mixed-contexts --prompts 5", exit_code);
  ASSERT_TRUE(report.is_object()) << "no report";
  EXPECT_EQ(exit_code, 0) << report.dump();
  EXPECT_EQ(report["ok"], kClients * kRequests) << report.dump();
  EXPECT_EQ(report["lost"], 0);
  EXPECT_EQ(report["wrong"], 0);
}

}  // namespace
}  // namespace star::testing
