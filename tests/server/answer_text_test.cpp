// AnswerText, the handler side of an answer: the text it streams, cut at the first stop string
// (found here with std::string::find on the whole answer) and at a stop id, and the tokens it
// counts. The end-to-end comparison with generate() is in in_process_server_test.
#include "star/server/answer_text.h"

#include <gtest/gtest.h>

#include "star/engine/runtime_model.h"
#include "support/temp_dir.h"

namespace star::server {
namespace {

class AnswerTextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new star::testing::TempDir;
    const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + (dir_->path() / "model").string() +
                             " --preset tiny --seed 3 >/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0);
    Result<RuntimeModel> m = open_model(dir_->path() / "model");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }
  static const Tokenizer& tokenizer() { return *model_->tokenizer; }

  // The answer streamed in pushes of `per_push` tokens; the last push ends it.
  static GeneratedText stream(AnswerText& answer, const std::vector<int32_t>& ids, size_t per_push,
                              bool ends_with_stop_id = false) {
    GeneratedText all;
    for (size_t i = 0; i < ids.size(); i += per_push) {
      SampledTokens push;
      push.ids.assign(ids.begin() + static_cast<ptrdiff_t>(i), ids.begin() + static_cast<ptrdiff_t>(std::min(ids.size(), i + per_push)));
      push.ends_answer = i + per_push >= ids.size();
      push.ends_with_stop_id = push.ends_answer && ends_with_stop_id;
      GeneratedText piece = answer.add(push);
      all.token_ids.insert(all.token_ids.end(), piece.token_ids.begin(), piece.token_ids.end());
      all.text += piece.text;
    }
    return all;
  }

  static inline star::testing::TempDir* dir_ = nullptr;
  static inline RuntimeModel* model_ = nullptr;
};

const char* const kAnswer = " Once upon a time, a little fox ran over the hill and said hello to the dog.";

TEST_F(AnswerTextTest, HowTheTokensArePushedDoesNotChangeTheText) {
  const std::vector<int32_t> ids = tokenizer().encode(kAnswer, {.add_bos = false});
  AnswerText one_by_one(tokenizer(), {});
  const GeneratedText want = stream(one_by_one, ids, 1);
  EXPECT_EQ(want.token_ids, ids);
  EXPECT_EQ(one_by_one.completion_tokens(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(one_by_one.finish_reason(FinishReason::kLength), FinishReason::kLength);
  for (size_t per_push : {2u, 5u, 1000u}) {
    AnswerText answer(tokenizer(), {});
    const GeneratedText got = stream(answer, ids, per_push);
    EXPECT_EQ(got.text, want.text) << per_push;
    EXPECT_EQ(got.token_ids, want.token_ids) << per_push;
  }
}

TEST_F(AnswerTextTest, AStopStringCutsTheTextBeforeItAndEndsTheAnswer) {
  const std::vector<int32_t> ids = tokenizer().encode(kAnswer, {.add_bos = false});
  AnswerText free_run(tokenizer(), {});
  const std::string whole = stream(free_run, ids, 1).text;
  for (const std::string stop : {"fox", "o", "hill and", "dog."}) {
    SCOPED_TRACE(stop);
    const size_t at = whole.find(stop);
    ASSERT_NE(at, std::string::npos);
    AnswerText answer(tokenizer(), {"never there", stop});
    const GeneratedText got = stream(answer, ids, 3);
    EXPECT_EQ(got.text, whole.substr(0, at));
    EXPECT_TRUE(answer.stopped());
    EXPECT_EQ(answer.finish_reason(FinishReason::kCancelled), FinishReason::kStop);
    EXPECT_EQ(answer.completion_tokens(), static_cast<int64_t>(got.token_ids.size()));
    // The tokens end with the one that completed the stop string: without it the text has no stop.
    ASSERT_FALSE(got.token_ids.empty());
    const std::vector<int32_t> before(got.token_ids.begin(), got.token_ids.end() - 1);
    AnswerText shorter(tokenizer(), {});
    EXPECT_EQ(stream(shorter, before, 1).text.find(stop), std::string::npos);
    AnswerText up_to_the_last(tokenizer(), {});
    EXPECT_NE(stream(up_to_the_last, got.token_ids, 1).text.find(stop), std::string::npos);
    SampledTokens later;
    later.ids = {ids.back()};
    EXPECT_TRUE(answer.add(later).token_ids.empty()) << "nothing after the end";
  }
}

TEST_F(AnswerTextTest, AStopIdEndsTheAnswerOutsideIt) {
  std::vector<int32_t> ids = tokenizer().encode(kAnswer, {.add_bos = false});
  AnswerText plain(tokenizer(), {});
  const GeneratedText want = stream(plain, ids, 1);
  ids.push_back(ids.front());  // the stop id: any id, as the engine marks it
  AnswerText answer(tokenizer(), {});
  const GeneratedText got = stream(answer, ids, 4, /*ends_with_stop_id=*/true);
  EXPECT_EQ(got.token_ids, want.token_ids);
  EXPECT_EQ(got.text, want.text);
  EXPECT_EQ(answer.completion_tokens(), static_cast<int64_t>(want.token_ids.size()));
  EXPECT_FALSE(answer.stopped());
  EXPECT_EQ(answer.finish_reason(FinishReason::kStop), FinishReason::kStop);
}

}  // namespace
}  // namespace star::server
