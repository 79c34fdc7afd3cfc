// star-eval's prompts: the chat prompt against transformers' apply_chat_template with
// SmolLM2-135M-Instruct's own template (tests/reference/make_eval_chat_fixtures.py), split where
// the question starts, and sized so that the template's turns stay inside the length.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "eval_test_util.h"
#include "star/eval/eval_prompt.h"
#include "support/test_paths.h"

namespace star::eval {
namespace {

using star::testing::eval_tokenizer;

struct Case {
  TaskSample sample;
  std::string rendered;
};

struct Fixture {
  ChatTemplate chat;
  std::vector<Case> cases;
};

Fixture read_fixture() {
  std::ifstream in(star::testing::source_dir() / "tests" / "fixtures" / "chat" / "eval_chat_smollm2.json");
  const nlohmann::json root = nlohmann::json::parse(in);
  const std::string chat_template = root["chat_template"];
  Fixture f{{detect_chat_format(chat_template), {"", "", chat_default_system(chat_template)}}, {}};
  for (const auto& c : root["cases"]) {
    TaskSample s;
    s.task = "fixture";
    s.context = c["context"];
    s.question = c["question"];
    s.answer_prefix = c["answer_prefix"];
    s.query = s.question + s.answer_prefix;
    f.cases.push_back({s, c["rendered"]});
  }
  return f;
}

TEST(EvalPrompt, ChatPromptMatchesTransformersWithSmolLm2sTemplate) {
  const Fixture f = read_fixture();
  ASSERT_EQ(f.chat.format, ChatFormat::kChatMl);
  ASSERT_EQ(f.cases.size(), 4u);
  for (const Case& c : f.cases) {
    Result<EvalPrompt> p = eval_prompt(c.sample, PromptFormat::kChat, f.chat);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->context + p->query, c.rendered);
    // The haystack is the Star Attention context; the question and what follows it the query.
    EXPECT_TRUE(p->context.starts_with("<|im_start|>system\n")) << p->context;
    EXPECT_TRUE(p->context.ends_with("<|im_start|>user\n" + c.sample.context)) << p->context;
    EXPECT_TRUE(p->query.starts_with(c.sample.question)) << p->query;
    EXPECT_TRUE(p->query.ends_with("<|im_start|>assistant\n" + c.sample.answer_prefix.substr(1))) << p->query;
  }
}

TEST(EvalPrompt, PlainPromptIsTheSampleAsRulerWritesIt) {
  const Fixture f = read_fixture();
  for (const Case& c : f.cases) {
    Result<EvalPrompt> p = eval_prompt(c.sample, PromptFormat::kPlain, f.chat);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->context, c.sample.context);
    EXPECT_EQ(p->query, c.sample.question + c.sample.answer_prefix);
    const PromptIds ids = encode_prompt(*p, PromptFormat::kPlain, eval_tokenizer());
    EXPECT_EQ(ids.context, eval_tokenizer().encode(c.sample.context, EncodeOptions{.add_bos = true}));
  }
}

TEST(EvalPrompt, ChatMarkersAreSpecialTokens) {
  const Fixture f = read_fixture();
  const ChatTemplate llama3{ChatFormat::kLlama3, {"<|begin_of_text|>", "<|eot_id|>", ""}};
  Result<EvalPrompt> p = eval_prompt(f.cases[0].sample, PromptFormat::kChat, llama3);
  ASSERT_TRUE(p.ok());
  const PromptIds ids = encode_prompt(*p, PromptFormat::kChat, eval_tokenizer());
  ASSERT_FALSE(ids.context.empty());
  EXPECT_EQ(ids.context.front(), eval_tokenizer().bos_id());  // the template's BOS, not a second one
  EXPECT_NE(ids.context[1], eval_tokenizer().bos_id());
  const std::vector<int32_t> eot = eval_tokenizer().encode("<|eot_id|>", EncodeOptions{.parse_special = true});
  ASSERT_EQ(eot.size(), 1u);
  EXPECT_NE(std::find(ids.query.begin(), ids.query.end(), eot[0]), ids.query.end());
}

TEST(EvalPrompt, ChatSamplesKeepTheTemplateInsideTheLength) {
  const ChatTemplate llama3{ChatFormat::kLlama3, {"<|begin_of_text|>", "<|eot_id|>", ""}};
  Result<int64_t> overhead = prompt_overhead_tokens(PromptFormat::kChat, llama3, eval_tokenizer());
  ASSERT_TRUE(overhead.ok()) << overhead.status().to_string();
  EXPECT_GT(*overhead, 5);
  // 2K: cwe's worked example and repeated words do not fit 512 tokens of this test vocabulary.
  const int64_t length = 2048;
  for (std::string_view task : {"niah_single_1", "niah_multikey_1", "vt", "cwe"}) {
    auto samples = make_task_samples(task, eval_tokenizer(), length, 3, 5, {.prompt_tokens = *overhead});
    ASSERT_TRUE(samples.ok()) << samples.status().to_string();
    for (const TaskSample& s : *samples) {
      Result<EvalPrompt> p = eval_prompt(s, PromptFormat::kChat, llama3);
      ASSERT_TRUE(p.ok());
      const PromptIds ids = encode_prompt(*p, PromptFormat::kChat, eval_tokenizer());
      const auto total = static_cast<int64_t>(ids.context.size() + ids.query.size());
      EXPECT_LE(total, length) << task;
      if (std::string_view(task).starts_with("niah")) EXPECT_GE(total, length - 40) << task;
    }
  }
}

TEST(EvalPrompt, ChatWithoutATemplateIsRefused) {
  const Fixture f = read_fixture();
  Result<EvalPrompt> p = eval_prompt(f.cases[0].sample, PromptFormat::kChat, ChatTemplate{});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("chat template"), std::string::npos) << p.status().message();
  EXPECT_EQ(parse_prompt_format("chat"), PromptFormat::kChat);
  EXPECT_EQ(parse_prompt_format("plain"), PromptFormat::kPlain);
  EXPECT_FALSE(parse_prompt_format("chatml").has_value());
}

}  // namespace
}  // namespace star::eval
