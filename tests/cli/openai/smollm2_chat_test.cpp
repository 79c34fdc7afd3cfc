// Must show 3 of issue 14: the official `openai` Python package chats with SmolLM2-135M-Instruct
// (the Q4_1 GGUF) through star-openai in front of `mpirun -np 2 star-server --attention star`, and
// the greedy answer to "What is the capital of France?" names Paris (openai_smollm2_test.py).
// Skips when scripts/fetch_models.sh has not put the GGUF in the model cache.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>

#include "shim_process.h"
#include "support/model_cache.h"
#include "support/server_process.h"

namespace star::testing {
namespace {

TEST(SmolLm2Chat, OfficialOpenAiClientOnTwoRanksWithStarAttention) {
  STAR_REQUIRE_SMOLLM2(gguf);
  ServerProcess server(gguf, 2, {"--attention", "star", "--api-key", "backend-key"});
  ASSERT_TRUE(server.ready()) << server.log();
  ShimProcess shim({"--backend", server.address(), "--backend-api-key", "backend-key", "--api-key", "shim-key"});
  ASSERT_TRUE(shim.ready()) << shim.log();

  const std::string command = "STAR_OPENAI_BASE_URL=" + shim.base_url() + " STAR_OPENAI_API_KEY=shim-key " +
                              STAR_PYTHON + " " + STAR_SOURCE_DIR + "/tests/cli/openai/openai_smollm2_test.py 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77) GTEST_SKIP() << out;
  std::printf("%s", out.c_str());
  EXPECT_EQ(code, 0) << out << "\nserver log:\n" << server.log() << "\nshim log:\n" << shim.log();
}

}  // namespace
}  // namespace star::testing
