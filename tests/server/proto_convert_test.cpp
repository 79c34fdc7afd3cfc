#include "star/server/proto_convert.h"

#include <gtest/gtest.h>

#include "star/attention/attention_config_io.h"

namespace star::server {
namespace {

TEST(AttentionOverride, SetFieldsReplaceTheBaseAndTheRestStays) {
  AttentionConfig base;
  base.algorithm = "pulsar";
  base.block_size = 512;
  base.summary_chunks = 4;
  v1::AttentionConfig o;
  o.set_scoring("bm25");
  o.set_keep_prefix_kv(true);
  Result<AttentionConfig> c = apply_attention_override(base, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  AttentionConfig expected = base;
  expected.scoring = "bm25";
  expected.keep_prefix_kv = true;
  EXPECT_EQ(attention_config_to_json(*c), attention_config_to_json(expected));
}

TEST(AttentionOverride, AFractionWithoutChunksClearsTheBaseChunks) {
  AttentionConfig base;
  base.summary_chunks = 4;
  v1::AttentionConfig o;
  o.set_summary_fraction(0.25);
  Result<AttentionConfig> c = apply_attention_override(base, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->summary_chunks, 0);
  EXPECT_EQ(c->summary_fraction, 0.25);
  o.set_summary_chunks(2);
  EXPECT_EQ(apply_attention_override(base, o)->summary_chunks, 2);
}

TEST(AttentionOverride, AFullProtoReproducesItsConfig) {
  AttentionConfig from;
  from.algorithm = "streaming";
  from.streaming_sink = 4;
  from.streaming_window = 64;
  from.anchor_size = 16;
  from.anchor_positions = "adjacent";
  from.position_mode = "contiguous";
  Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, attention_to_proto(from));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(attention_config_to_json(*c), attention_config_to_json(from));
}

TEST(AttentionOverride, TheBlockEdgeRepairsTravel) {
  AttentionConfig from;
  from.algorithm = "no-anchor";
  from.boundary_overlap = 32;
  from.boundary_snap = 48;
  Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, attention_to_proto(from));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->boundary_overlap, 32);
  EXPECT_EQ(c->boundary_snap, 48);
  v1::AttentionConfig o;
  o.set_algorithm("dense");
  o.set_boundary_snap(8);
  c = apply_attention_override(AttentionConfig{}, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("boundary_snap = 8"), std::string::npos) << c.status().message();
}

TEST(AttentionOverride, AnUnknownAnchorPositionIsNamed) {
  v1::AttentionConfig o;
  o.set_anchor_positions("last");
  const Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("anchor_positions = \"last\""), std::string::npos) << c.status().message();
}

TEST(AttentionOverride, BadValuesNameTheField) {
  v1::AttentionConfig o;
  o.set_chunk_tokens(0);
  Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message().rfind("attention: ", 0), 0u);
  EXPECT_NE(c.status().message().find("chunk_tokens"), std::string::npos);
}

TEST(AttentionOverride, SparseAttentionTravelsInTensorRtShape) {
  AttentionConfig from;
  from.sparse.algorithm = "skip_softmax";
  from.sparse.skip_softmax = {1000.0, 16.5};
  const v1::AttentionConfig proto = attention_to_proto(from);
  const auto& fields = proto.sparse_attention().fields();
  EXPECT_EQ(fields.at("algorithm").string_value(), "skip_softmax");
  EXPECT_EQ(fields.at("threshold_scale_factor").struct_value().fields().at("decode").number_value(), 16.5);
  Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, proto);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->sparse, from.sparse);

  AttentionConfig rocket;
  rocket.sparse.algorithm = "rocket";
  rocket.sparse.rocket.prompt_budget = 512;
  c = apply_attention_override(from, attention_to_proto(rocket));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->sparse, rocket.sparse);  // the section is replaced whole
}

TEST(AttentionOverride, BadSparseFieldsAreNamed) {
  v1::AttentionConfig o;
  (*o.mutable_sparse_attention()->mutable_fields())["algorithm"].set_string_value("rocket");
  (*o.mutable_sparse_attention()->mutable_fields())["page_size"].set_number_value(3);
  Result<AttentionConfig> c = apply_attention_override(AttentionConfig{}, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("attention: ", 0), 0u);
  EXPECT_NE(c.status().message().find("sparse_attention.page_size: 3"), std::string::npos) << c.status().message();
}

TEST(ProtoConvert, StatusCodesMapOneToOne) {
  EXPECT_TRUE(to_grpc_status(ok_status()).ok());
  const grpc::Status s = to_grpc_status(not_found("context_id: x"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "context_id: x");
  EXPECT_EQ(to_grpc_status(resource_exhausted("full")).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(to_grpc_status(Status(StatusCode::kUnauthenticated, "k")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST(ProtoConvert, FinishReasons) {
  EXPECT_EQ(finish_reason_to_proto(FinishReason::kStop), v1::FINISH_REASON_STOP);
  EXPECT_EQ(finish_reason_to_proto(FinishReason::kLength), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(finish_reason_to_proto(FinishReason::kCancelled), v1::FINISH_REASON_CANCELLED);
  EXPECT_STREQ(finish_reason_proto_name(v1::FINISH_REASON_CANCELLED), finish_reason_name(FinishReason::kCancelled));
}

}  // namespace
}  // namespace star::server
