// run_request_batch on 1–4 ranks, as star-eval --concurrency runs a cell: requests at most 4 at a
// time answer exactly as run_inference answers each alone (tokens, text and finish reason).
// - mixed requests (context lengths, algorithms with one RocketKV, greedy and seeded sampling,
//   max_tokens, stopping at the end id or not) on a float32 model; one request outside the
//   vocabulary fails alone, with run_inference's error, while the others run;
// - star requests on Q4_1 weights with contexts whose whole-block Phase 1 chunks (over 100 rows)
//   share steps with the others' decode rows: the decode rows multiply apart from the chunk's,
//   through the kernels that give a row the same bits whatever rows are beside it.
#include <gtest/gtest.h>

#include <random>

#include "star/engine/request_batch.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"
#include "support/step_schedule.h"

namespace star {
namespace {

RuntimeModel* open_shared(testing::SharedModelDir* dir) {
  EXPECT_TRUE(dir->ok());
  auto m = open_model(dir->path());
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? new RuntimeModel(std::move(*m)) : nullptr;
}

class RequestBatch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    f32_dir_ = new testing::SharedModelDir("--preset tiny --seed 11 --heads 8 --kv-heads 2 --max-positions 4096");
    q4_1_dir_ = new testing::SharedModelDir(
        "--format gguf --dtype q4_1 --preset tiny --seed 12 --heads 8 --kv-heads 2 --hidden 192 --max-positions 4096",
        "m.gguf");
    f32_ = open_shared(f32_dir_);
    q4_1_ = open_shared(q4_1_dir_);
  }
  static void TearDownTestSuite() {
    delete f32_;
    delete q4_1_;
    delete f32_dir_;
    delete q4_1_dir_;
  }

  // Compares every request's batched answer with its answer alone; returns how many answered.
  int expect_batch_equals_alone(const RuntimeModel& model, const std::vector<InferenceRequest>& requests) {
    Result<std::vector<BatchAnswer>> batch = run_request_batch(model, comm_, requests, 4);
    EXPECT_TRUE(batch.ok()) << batch.status().to_string();
    if (!batch.ok()) return 0;
    EXPECT_EQ(batch->size(), requests.size());
    int answered = 0;
    for (size_t i = 0; i < requests.size() && i < batch->size(); ++i) {
      Result<InferenceOutcome> alone = run_inference(model, comm_, requests[i]);
      const BatchAnswer& together = (*batch)[i];
      if (!alone.ok()) {
        EXPECT_EQ(together.status.to_string(), alone.status().to_string()) << "request " << i;
        continue;
      }
      EXPECT_TRUE(together.status.ok()) << i << ": " << together.status.to_string();
      ++answered;
      if (comm_.rank() != 0) continue;
      EXPECT_FALSE(together.generation.tokens.empty()) << i;
      EXPECT_EQ(together.generation.tokens, alone->generation.tokens) << "request " << i;
      EXPECT_EQ(together.generation.text, alone->generation.text) << "request " << i;
      EXPECT_EQ(together.generation.finish_reason, alone->generation.finish_reason) << "request " << i;
    }
    return answered;
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  Communicator& comm_ = *world_;
  static testing::SharedModelDir *f32_dir_, *q4_1_dir_;
  static RuntimeModel *f32_, *q4_1_;
};

testing::SharedModelDir* RequestBatch::f32_dir_ = nullptr;
testing::SharedModelDir* RequestBatch::q4_1_dir_ = nullptr;
RuntimeModel* RequestBatch::f32_ = nullptr;
RuntimeModel* RequestBatch::q4_1_ = nullptr;

TEST_F(RequestBatch, MixedRequestsAnswerAsEachAlone) {
  ASSERT_NE(f32_, nullptr);
  const int64_t vocab = f32_->llama->config().vocab_size;
  std::vector<InferenceRequest> requests;
  for (SequenceSpec& s : testing::mixed_requests(12, std::min<int64_t>(vocab, 250), "", /*with_rocket=*/true)) {
    InferenceRequest r;
    r.context_ids = std::move(s.context_ids);
    r.query_ids = std::move(s.query_ids);
    r.attention = s.attention;
    r.generation = s.generation;
    requests.push_back(std::move(r));
  }
  requests[5].query_ids.push_back(static_cast<int32_t>(vocab + 7));  // outside the vocabulary
  ASSERT_FALSE(validate_request(f32_->llama->config(), requests[5]).ok());
  EXPECT_EQ(expect_batch_equals_alone(*f32_, requests), static_cast<int>(requests.size()) - 1);
}

TEST_F(RequestBatch, QuantizedDecodeBesideLongChunksAnswersAsAlone) {
  ASSERT_NE(q4_1_, nullptr);
  const int64_t vocab = std::min<int64_t>(q4_1_->llama->config().vocab_size, 250);
  std::mt19937 rng(20261127);
  std::vector<InferenceRequest> requests;
  for (int i = 0; i < 8; ++i) {
    InferenceRequest r;
    r.context_ids = testing::random_tokens(rng, 420 + 37 * i, vocab);
    r.query_ids = testing::random_tokens(rng, 3 + i % 4, vocab);
    r.attention.algorithm = i % 2 == 0 ? "star" : "dense";
    r.attention.block_size = 128;
    r.generation.max_tokens = 12;
    r.generation.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  EXPECT_EQ(expect_batch_equals_alone(*q4_1_, requests), static_cast<int>(requests.size()));
}

TEST_F(RequestBatch, AtLeastOneRunningIsRequired) {
  ASSERT_NE(f32_, nullptr);
  Result<std::vector<BatchAnswer>> none = run_request_batch(*f32_, comm_, {}, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("max_running"), std::string::npos);
  Result<std::vector<BatchAnswer>> empty = run_request_batch(*f32_, comm_, {}, 3);
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace star
