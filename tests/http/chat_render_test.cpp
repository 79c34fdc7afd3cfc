// The chat renderer against transformers' apply_chat_template on Meta's Llama 3 and Llama 2
// templates (tests/reference/make_chat_template_fixtures.py), and the context/query split.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "star/tokenizer/chat_render.h"
#include "support/test_paths.h"

namespace star::http {
namespace {

struct FixtureCase {
  ChatFormat format;
  ChatSpecialTokens tokens;
  std::vector<ChatMessage> messages;
  std::string rendered;
};

std::vector<FixtureCase> fixture_cases() {
  std::ifstream in(testing::source_dir() / "tests" / "fixtures" / "chat" / "chat_templates.json");
  const nlohmann::json root = nlohmann::json::parse(in);
  std::vector<FixtureCase> cases;
  for (const auto& c : root["cases"]) {
    FixtureCase f{*parse_chat_format(c["format"].get<std::string>()), {c["bos"], c["eos"]}, {}, c["rendered"]};
    for (const auto& m : c["messages"]) f.messages.push_back({m["role"], m["content"]});
    cases.push_back(std::move(f));
  }
  return cases;
}

TEST(ChatRender, MatchesTransformersApplyChatTemplate) {
  const std::vector<FixtureCase> cases = fixture_cases();
  ASSERT_EQ(cases.size(), 12u);
  for (size_t i = 0; i < cases.size(); ++i) {
    Result<RenderedChat> r = render_chat(cases[i].format, cases[i].messages, cases[i].tokens);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    EXPECT_EQ(r->whole(), cases[i].rendered) << "case " << i << " (" << chat_format_name(cases[i].format) << ")";
  }
}

// The query starts with the last user message: its header (Llama 3) or its [INST] (Llama 2).
TEST(ChatRender, QueryIsTheLastUserTurnAndTheAssistantHeader) {
  for (const FixtureCase& c : fixture_cases()) {
    Result<RenderedChat> r = render_chat(c.format, c.messages, c.tokens);
    ASSERT_TRUE(r.ok());
    const std::string& last_user = std::find_if(c.messages.rbegin(), c.messages.rend(), [](const ChatMessage& m) {
                                     return m.role == "user";
                                   })->role;
    ASSERT_EQ(last_user, "user");
    if (c.format == ChatFormat::kLlama3) {
      EXPECT_TRUE(r->query.ends_with("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")) << r->query;
      if (c.messages.size() == 1) {
        EXPECT_EQ(r->context, "");  // BOS opens the query when there is no context
        EXPECT_TRUE(r->query.starts_with("<|begin_of_text|><|start_header_id|>user"));
      } else {
        EXPECT_TRUE(r->context.starts_with("<|begin_of_text|>"));
        EXPECT_TRUE(r->query.starts_with("<|start_header_id|>user<|end_header_id|>\n\n")) << r->query;
        EXPECT_TRUE(r->context.ends_with("<|eot_id|>")) << r->context;
      }
    } else {
      EXPECT_TRUE(r->query.ends_with(" [/INST]")) << r->query;
      EXPECT_EQ(r->query.find("<<SYS>>"), std::string::npos) << "the system prompt belongs to the context";
    }
  }
}

// The templates' add_generation_prompt appends Llama 3's assistant header and nothing else; Llama
// 2's template has no generation prompt.
TEST(ChatRender, WithoutGenerationPromptTheAssistantHeaderIsLeftOut) {
  for (const FixtureCase& c : fixture_cases()) {
    Result<RenderedChat> with = render_chat(c.format, c.messages, c.tokens);
    Result<RenderedChat> without = render_chat(c.format, c.messages, c.tokens, /*add_generation_prompt=*/false);
    ASSERT_TRUE(with.ok() && without.ok());
    const std::string header = c.format == ChatFormat::kLlama3 ? "<|start_header_id|>assistant<|end_header_id|>\n\n" : "";
    EXPECT_EQ(without->whole() + header, with->whole()) << chat_format_name(c.format);
    EXPECT_EQ(without->context, with->context);
  }
}

TEST(ChatRender, Llama2SystemPromptStaysInTheContext) {
  const std::vector<ChatMessage> messages = {{"system", "Notes: the fox."}, {"user", "What did the fox do?"}};
  Result<RenderedChat> r = render_chat(ChatFormat::kLlama2, messages, {"<s>", "</s>"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->context, "<s>[INST] <<SYS>>\nNotes: the fox.\n<</SYS>>\n\n");
  EXPECT_EQ(r->query, "What did the fox do? [/INST]");
}

TEST(ChatRender, RefusesWhatTheFormatCannotSay) {
  const ChatSpecialTokens tokens{"<s>", "</s>"};
  const std::vector<ChatMessage> no_user = {{"system", "s"}, {"assistant", "a"}};
  Result<RenderedChat> r = render_chat(ChatFormat::kLlama3, no_user, tokens);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().message().starts_with("messages: ")) << r.status().message();

  const std::vector<ChatMessage> two_users = {{"user", "a"}, {"user", "b"}};
  r = render_chat(ChatFormat::kLlama2, two_users, tokens);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().message().starts_with("messages[1]: ")) << r.status().message();
  EXPECT_TRUE(render_chat(ChatFormat::kLlama3, two_users, tokens).ok());

  r = render_chat(ChatFormat::kNone, two_users, tokens);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/v1/completions"), std::string::npos);
}

TEST(ChatFormat, DetectedFromTheTemplateText) {
  EXPECT_EQ(detect_chat_format("{{ '<|start_header_id|>' + role }}"), ChatFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("{{ bos_token + '[INST] ' + content }}"), ChatFormat::kLlama2);
  EXPECT_EQ(detect_chat_format("{{ '<|im_start|>' }}"), ChatFormat::kChatMl);
  EXPECT_EQ(detect_chat_format("{{ '<start_of_turn>' }}"), ChatFormat::kNone);
  EXPECT_EQ(detect_chat_format(""), ChatFormat::kNone);
  for (ChatFormat f : {ChatFormat::kNone, ChatFormat::kLlama3, ChatFormat::kLlama2, ChatFormat::kChatMl}) {
    EXPECT_EQ(parse_chat_format(chat_format_name(f)), f);
  }
  EXPECT_FALSE(parse_chat_format("gemma").has_value());
}

}  // namespace
}  // namespace star::http
