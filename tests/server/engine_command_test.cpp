#include "star/server/engine_command.h"

#include <gtest/gtest.h>

#include "star/attention/attention_config_io.h"

namespace star::server {
namespace {

TEST(EngineCommand, GenerateSurvivesTheRoundTrip) {
  EngineCommand c;
  c.op = EngineCommand::Op::kGenerate;
  c.release = {"ctx-1", "ctx-2"};
  c.context_ids = {1, 2, 3};
  c.attention.algorithm = "pulsar";
  c.attention.summary_fraction = 0.3;
  c.query_ids = {4, 5};
  c.generation.max_tokens = 17;
  c.generation.sampling.temperature = 0.7f;
  c.generation.sampling.top_k = 40;
  c.generation.sampling.top_p = 0.9f;
  c.generation.sampling.seed = 0xFFFFFFFFFFFFFFF1ull;
  c.generation.stop_strings = {"\n\n", "END"};
  c.generation.stop_token_ids = {9};
  c.generation.ignore_eos = true;
  Result<EngineCommand> d = decode_command(encode_command(c));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->op, c.op);
  EXPECT_EQ(d->release, c.release);
  EXPECT_EQ(d->context_ids, c.context_ids);
  EXPECT_TRUE(d->context_id.empty());
  EXPECT_EQ(attention_config_to_json(d->attention), attention_config_to_json(c.attention));
  EXPECT_EQ(d->query_ids, c.query_ids);
  EXPECT_EQ(d->generation.max_tokens, 17);
  EXPECT_EQ(d->generation.sampling.temperature, 0.7f);
  EXPECT_EQ(d->generation.sampling.top_k, 40);
  EXPECT_EQ(d->generation.sampling.top_p, 0.9f);
  EXPECT_EQ(d->generation.sampling.seed, c.generation.sampling.seed);
  EXPECT_EQ(d->generation.stop_strings, c.generation.stop_strings);
  EXPECT_EQ(d->generation.stop_token_ids, c.generation.stop_token_ids);
  EXPECT_TRUE(d->generation.ignore_eos);
}

TEST(EngineCommand, AnEncodedContextTravelsByIdAlone) {
  EngineCommand c;
  c.op = EngineCommand::Op::kGenerate;
  c.context_id = "ctx-7-00000000";
  c.query_ids = {3};
  const std::string text = encode_command(c);
  EXPECT_EQ(text.find("context_ids"), std::string::npos);
  Result<EngineCommand> d = decode_command(text);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->context_id, c.context_id);
}

TEST(EngineCommand, CreateContextReleaseAndShutdownSurviveTheRoundTrip) {
  EngineCommand create;
  create.op = EngineCommand::Op::kCreateContext;
  create.context_id = "ctx-1-abcdef01";
  create.context_ids = {7, 8};
  create.reserve_tokens = 33;
  Result<EngineCommand> d = decode_command(encode_command(create));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->op, EngineCommand::Op::kCreateContext);
  EXPECT_EQ(d->context_id, create.context_id);
  EXPECT_EQ(d->context_ids, create.context_ids);
  EXPECT_EQ(d->reserve_tokens, 33);
  for (EngineCommand::Op op : {EngineCommand::Op::kRelease, EngineCommand::Op::kShutdown}) {
    EngineCommand c;
    c.op = op;
    c.release = {"x"};
    Result<EngineCommand> r = decode_command(encode_command(c));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->op, op);
    EXPECT_EQ(r->release, c.release);
  }
}

TEST(EngineCommand, MalformedTextIsAnInternalError) {
  for (const char* text : {"", "[]", "{\"op\": \"dance\", \"release\": []}", "{\"op\": \"release\"}"}) {
    Result<EngineCommand> d = decode_command(text);
    EXPECT_FALSE(d.ok()) << text;
    EXPECT_EQ(d.status().code(), StatusCode::kInternal) << text;
  }
}

TEST(AdmitDecision, SurvivesTheRoundTrip) {
  Result<AdmitDecision> d = decode_decision(encode_decision({true, {"ctx-1", "ctx-3"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->keep);
  EXPECT_EQ(d->release, (std::vector<std::string>{"ctx-1", "ctx-3"}));
  EXPECT_FALSE(decode_decision("{}").ok());
}

}  // namespace
}  // namespace star::server
