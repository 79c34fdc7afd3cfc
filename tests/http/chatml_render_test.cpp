// ChatML rendering against transformers' apply_chat_template on SmolLM2-135M-Instruct's own
// template (tests/reference/make_chatml_fixtures.py), the default system message read out of that
// template, and the context/query split.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "star/tokenizer/chat_render.h"
#include "support/test_paths.h"

namespace star::http {
namespace {

struct ChatMlFixture {
  std::string chat_template;
  std::vector<std::vector<ChatMessage>> conversations;
  std::vector<std::string> rendered;
};

ChatMlFixture read_fixture() {
  std::ifstream in(testing::source_dir() / "tests" / "fixtures" / "chat" / "chatml_smollm2.json");
  const nlohmann::json root = nlohmann::json::parse(in);
  ChatMlFixture f{root["chat_template"], {}, {}};
  for (const auto& c : root["cases"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    f.conversations.push_back(std::move(messages));
    f.rendered.push_back(c["rendered"]);
  }
  return f;
}

TEST(ChatMlRender, MatchesTransformersWithSmolLm2sTemplate) {
  const ChatMlFixture f = read_fixture();
  ASSERT_EQ(f.conversations.size(), 12u);
  ASSERT_EQ(detect_chat_format(f.chat_template), ChatFormat::kChatMl);
  const std::string system = chat_default_system(f.chat_template);
  EXPECT_EQ(system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  for (size_t i = 0; i < f.conversations.size(); ++i) {
    Result<RenderedChat> r = render_chat(ChatFormat::kChatMl, f.conversations[i], {"", "", system});
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    EXPECT_EQ(r->whole(), f.rendered[i]) << "case " << i;
  }
}

TEST(ChatMlRender, QueryIsTheLastUserTurnAndTheAssistantHeader) {
  const ChatMlFixture f = read_fixture();
  const std::string system = chat_default_system(f.chat_template);
  for (size_t i = 0; i < f.conversations.size(); ++i) {
    const std::vector<ChatMessage>& messages = f.conversations[i];
    Result<RenderedChat> r = render_chat(ChatFormat::kChatMl, messages, {"", "", system});
    ASSERT_TRUE(r.ok());
    size_t last_user = messages.size();
    while (messages[--last_user].role != "user") {}
    EXPECT_TRUE(r->query.starts_with("<|im_start|>user\n" + messages[last_user].content + "<|im_end|>\n"))
        << "case " << i << ": " << r->query;
    EXPECT_TRUE(r->query.ends_with("<|im_end|>\n<|im_start|>assistant\n")) << "case " << i;
    // Everything before the last user turn, the default system message included, is context.
    EXPECT_TRUE(r->context.starts_with("<|im_start|>system\n")) << "case " << i << ": " << r->context;
    EXPECT_TRUE(r->context.ends_with("<|im_end|>\n")) << "case " << i;
  }
}

// SmolLM2's template writes the assistant header only under add_generation_prompt.
TEST(ChatMlRender, WithoutGenerationPromptTheAssistantHeaderIsLeftOut) {
  const ChatMlFixture f = read_fixture();
  const std::string system = chat_default_system(f.chat_template);
  for (size_t i = 0; i < f.conversations.size(); ++i) {
    Result<RenderedChat> with = render_chat(ChatFormat::kChatMl, f.conversations[i], {"", "", system});
    Result<RenderedChat> without =
        render_chat(ChatFormat::kChatMl, f.conversations[i], {"", "", system}, /*add_generation_prompt=*/false);
    ASSERT_TRUE(with.ok() && without.ok());
    EXPECT_EQ(without->whole() + "<|im_start|>assistant\n", with->whole()) << "case " << i;
    EXPECT_EQ(without->context, with->context) << "case " << i;
  }
}

TEST(ChatMlRender, DefaultSystemMessageComesFromTheTemplate) {
  // Escaped newlines in the Jinja literal, double quotes, and a template without a default.
  EXPECT_EQ(chat_default_system(R"({{ "<|im_start|>system\nBe brief.\\n\"Really\"<|im_end|>\n" }})"),
            "Be brief.\\n\"Really\"");
  EXPECT_EQ(chat_default_system("{{ '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}"), "You are Qwen.");
  EXPECT_EQ(chat_default_system("{{ '<|im_start|>' + message['role'] + '\\n' }}"), "");
  // Qwen 2.5: a system header framing messages[0]['content'] first, the default further on.
  EXPECT_EQ(chat_default_system("{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{% else %}"
                                "{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}"),
            "You are Qwen.");
  EXPECT_EQ(chat_default_system(""), "");

  const std::vector<ChatMessage> chat = {{"user", "hi"}};
  Result<RenderedChat> r = render_chat(ChatFormat::kChatMl, chat, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->context, "");
  EXPECT_EQ(r->query, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace star::http
