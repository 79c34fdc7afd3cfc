// Must show 1: what star-server streams equals star-run's output for the same model, input,
// attention configuration and seed; star-client and the Python example print the same text.
#include <gtest/gtest.h>

#include "e2e_fixture.h"
#include "support/test_paths.h"

namespace star::testing {
namespace {

class StopSharedServer : public ::testing::Environment {
 public:
  void TearDown() override { E2E::stop_shared(); }
};
const auto* const kStopSharedServer = ::testing::AddGlobalTestEnvironment(new StopSharedServer);

struct Case {
  std::string name;
  std::string star_run_flags;  // the same choices as `attention` and the sampling fields below
  float temperature;
  uint64_t seed;
  std::optional<v1::AttentionConfig> attention;
};

std::vector<Case> cases() {
  v1::AttentionConfig pulsar;
  pulsar.set_algorithm("pulsar");
  pulsar.set_block_size(256);
  v1::AttentionConfig ring;
  ring.set_algorithm("ring");
  return {
      {"star_greedy", "", 0.f, 0, std::nullopt},
      {"star_sampled", "--temperature 0.9 --seed 11", 0.9f, 11, std::nullopt},
      {"pulsar_sampled", "--attention pulsar --block-size 256 --temperature 0.7 --seed 5", 0.7f, 5, pulsar},
      {"ring_greedy", "--attention ring", 0.f, 0, ring},
  };
}

TEST_F(E2E, StreamedOutputEqualsStarRun) {
  const std::string context = context_text(20, "foxes");
  const std::string query = "What jumps over the dog?";
  const auto context_file = write_file("equality_context.txt", context);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    v1::GenerateRequest request = text_request(context, query, 24, c.temperature, c.seed);
    if (c.attention) *request.mutable_attention() = *c.attention;
    GenerateStream streamed = generate(stub(), request, with_key());
    ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
    ASSERT_TRUE(streamed.done.has_value());
    EXPECT_FALSE(streamed.progress.empty()) << "Phase 1 ran, so progress should have been streamed";

    const CommandResult star_run = run_command(mpirun_prefix(2) + STAR_RUN_PATH + " --model " + model().string() +
                                               " --context-file " + context_file.string() + " --query '" + query +
                                               "' --max-tokens 24 --log-level error " + c.star_run_flags);
    ASSERT_EQ(star_run.exit_code, 0);
    EXPECT_EQ(streamed.text + "\n", star_run.out);
    EXPECT_EQ(static_cast<size_t>(streamed.done->usage().completion_tokens()), streamed.token_ids.size());
  }
}

TEST_F(E2E, StarClientAndPythonExamplePrintTheStreamedText) {
  const std::string context = context_text(12, "clients");
  const std::string query = "Which animal is lazy?";
  const auto context_file = write_file("client_context.txt", context);
  GenerateStream streamed = generate(stub(), text_request(context, query, 16, 0.5f, 9), with_key());
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();

  const std::string client = std::string(STAR_CLIENT_PATH) + " --server " + server().address() + " --api-key " + kApiKey;
  const CommandResult printed = run_command(client + " generate --context-file " + context_file.string() + " --query '" +
                                            query + "' --max-tokens 16 --temperature 0.5 --seed 9");
  ASSERT_EQ(printed.exit_code, 0);
  EXPECT_EQ(printed.out, streamed.text + "\n");

  const CommandResult health = run_command(client + " health");
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.out, "SERVING\n");

  if (run_command("/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null").exit_code != 0) {
    GTEST_SKIP() << "python3-grpcio is not installed: the Python example was not run";
  }
  const std::string example = (source_dir() / "scripts" / "examples" / "star_client.py").string();
  const CommandResult python = run_command("/usr/bin/python3 " + example + " --server " + server().address() +
                                           " --api-key " + kApiKey + " --context-file " + context_file.string() +
                                           " --query '" + query + "' --max-tokens 16 --temperature 0.5 --seed 9");
  ASSERT_EQ(python.exit_code, 0);
  EXPECT_EQ(python.out, streamed.text + "\n");
}

TEST_F(E2E, ReflectionListsTheServices) {
  if (run_command("/usr/bin/python3 -c 'import grpc' 2>/dev/null").exit_code != 0) {
    GTEST_SKIP() << "python3-grpcio is not installed: no reflection client at hand";
  }
  // A raw ServerReflectionRequest {list_services: ""} (field 7, length 0); the answer's bytes hold
  // the service names.
  const std::string script =
      "import grpc, sys\n"
      "call = grpc.insecure_channel(sys.argv[1]).stream_stream("
      "'/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo')\n"
      "answer = b''.join(call(iter([bytes([0x3a, 0])]))).decode('latin1')\n"
      "print(*(name for name in ('star.v1.StarService', 'grpc.health.v1.Health') if name in answer))\n";
  const std::filesystem::path file = write_file("reflection.py", script);
  const CommandResult listed = run_command("/usr/bin/python3 " + file.string() + " " + server().address());
  ASSERT_EQ(listed.exit_code, 0);
  EXPECT_EQ(listed.out, "star.v1.StarService grpc.health.v1.Health\n");
}

}  // namespace
}  // namespace star::testing
