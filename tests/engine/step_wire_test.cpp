// The step engine's wire: every field survives encode_step / decode_step, and bytes that are not a
// whole message (cut anywhere, any byte flipped) are refused as INVALID_ARGUMENT, never misread.
#include <gtest/gtest.h>

#include <string>

#include "star/engine/step_engine.h"

namespace star {
namespace {

StepMessage every_field_set() {
  StepMessage m;
  SequenceSpec a;
  a.id = 7;
  a.context_ids = {1, 5, 9, 300000};
  a.attention.algorithm = "pulsar";
  a.attention.block_size = 64;
  a.attention.anchor_size = 16;
  a.attention.boundary_overlap = 3;
  a.attention.boundary_snap = 12;
  a.attention.anchor_positions = "adjacent";
  a.attention.sink_tokens = 8;
  a.attention.chunk_tokens = 4;
  a.attention.summary_fraction = 0.25;
  a.attention.summary_chunks = 2;
  a.attention.scoring = "bm25";
  a.attention.position_mode = "contiguous";
  a.attention.keep_prefix_kv = true;
  a.attention.streaming_sink = 11;
  a.attention.streaming_window = 22;
  a.attention.sparse.algorithm = "rocket";
  a.attention.sparse.skip_softmax = {1000.5, 250.25};
  a.attention.sparse.rocket = {512, 16, 31, 8, 32, 8};
  a.query_ids = {2, 3};
  a.generation.sampling = {0.7f, 40, 0.9f, 0xFFFFFFFFFFFFFFFFull};
  a.generation.max_tokens = 99;
  a.generation.stop_strings = {"\n\n", "END"};
  a.generation.stop_token_ids = {0, 42};
  a.generation.ignore_eos = true;
  a.generation.return_query_logits = true;
  a.own_host = 3;
  SequenceSpec b;
  b.id = -3;
  b.context_id = "ctx-é";
  b.keep_as = "kept";
  m.admitted = {a, b};
  m.sampled = {{7, 12}, {8, -1}};
  m.finished = {4, 5};
  m.release = {"old", ""};
  m.keep = {"kept"};
  m.moved = {{7, 1}, {9, 0}};
  m.shutdown = true;
  return m;
}

void expect_same(const SequenceSpec& a, const SequenceSpec& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.context_id, b.context_id);
  EXPECT_EQ(a.context_ids, b.context_ids);
  const AttentionConfig &x = a.attention, &y = b.attention;
  EXPECT_EQ(x.algorithm, y.algorithm);
  EXPECT_EQ(x.block_size, y.block_size);
  EXPECT_EQ(x.anchor_size, y.anchor_size);
  EXPECT_EQ(x.boundary_overlap, y.boundary_overlap);
  EXPECT_EQ(x.boundary_snap, y.boundary_snap);
  EXPECT_EQ(x.anchor_positions, y.anchor_positions);
  EXPECT_EQ(x.sink_tokens, y.sink_tokens);
  EXPECT_EQ(x.chunk_tokens, y.chunk_tokens);
  EXPECT_EQ(x.summary_fraction, y.summary_fraction);
  EXPECT_EQ(x.summary_chunks, y.summary_chunks);
  EXPECT_EQ(x.scoring, y.scoring);
  EXPECT_EQ(x.position_mode, y.position_mode);
  EXPECT_EQ(x.keep_prefix_kv, y.keep_prefix_kv);
  EXPECT_EQ(x.streaming_sink, y.streaming_sink);
  EXPECT_EQ(x.streaming_window, y.streaming_window);
  EXPECT_EQ(x.sparse, y.sparse);
  const GenerationOptions &g = a.generation, &h = b.generation;
  EXPECT_EQ(g.sampling.temperature, h.sampling.temperature);
  EXPECT_EQ(g.sampling.top_k, h.sampling.top_k);
  EXPECT_EQ(g.sampling.top_p, h.sampling.top_p);
  EXPECT_EQ(g.sampling.seed, h.sampling.seed);
  EXPECT_EQ(g.max_tokens, h.max_tokens);
  EXPECT_EQ(g.stop_strings, h.stop_strings);
  EXPECT_EQ(g.stop_token_ids, h.stop_token_ids);
  EXPECT_EQ(g.ignore_eos, h.ignore_eos);
  EXPECT_EQ(g.return_query_logits, h.return_query_logits);
  EXPECT_EQ(a.query_ids, b.query_ids);
  EXPECT_EQ(a.keep_as, b.keep_as);
  EXPECT_EQ(a.own_host, b.own_host);
}

TEST(StepWire, EveryFieldRoundTrips) {
  const StepMessage sent = every_field_set();
  Result<StepMessage> got = decode_step(encode_step(sent));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->admitted.size(), sent.admitted.size());
  for (size_t i = 0; i < sent.admitted.size(); ++i) expect_same(got->admitted[i], sent.admitted[i]);
  EXPECT_EQ(got->sampled, sent.sampled);
  EXPECT_EQ(got->finished, sent.finished);
  EXPECT_EQ(got->release, sent.release);
  EXPECT_EQ(got->keep, sent.keep);
  EXPECT_EQ(got->moved, sent.moved);
  EXPECT_EQ(got->shutdown, sent.shutdown);
}

TEST(StepWire, AMoveToNoRankIsRefused) {
  StepMessage sent;
  sent.moved = {{3, -1}};
  Result<StepMessage> got = decode_step(encode_step(sent));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("sequence 3 moves to rank -1"), std::string::npos) << got.status().message();
}

TEST(StepWire, DefaultsRoundTrip) {
  // A spec left at its defaults comes back at its defaults (anchor_size -1, top_p 1, max_tokens 128).
  StepMessage sent;
  sent.admitted.emplace_back();
  Result<StepMessage> got = decode_step(encode_step(sent));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->admitted.size(), 1u);
  expect_same(got->admitted[0], SequenceSpec{});
  EXPECT_FALSE(got->shutdown);
  EXPECT_TRUE(got->sampled.empty());
}

TEST(StepWire, EveryCutIsRefused) {
  const std::string bytes = encode_step(every_field_set());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<StepMessage> got = decode_step(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(got.ok()) << "cut at " << n << " of " << bytes.size();
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("step message"), std::string::npos) << got.status().message();
  }
}

TEST(StepWire, FlippedBytesAreRefusedOrHarmless) {
  // A flip inside the sealed step fails the checksum; one in the frame's own bytes breaks the frame
  // (or, for a tag turned into an unknown field, loses the step or the checksum). Nothing decodes
  // to a different message.
  const std::string bytes = encode_step(every_field_set());
  int refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned mask : {0x01u, 0x10u, 0x80u, 0xFFu}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
      Result<StepMessage> got = decode_step(bad);
      if (got.ok()) {
        EXPECT_EQ(encode_step(*got), bytes) << "flip " << mask << " at " << i << " decoded to another message";
      } else {
        EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, static_cast<int>(bytes.size()) * 3);
}

TEST(StepWire, GarbageIsRefused) {
  for (std::string garbage : {std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11),
                              std::string("not a step"), std::string(64, '\0')}) {
    Result<StepMessage> got = decode_step(garbage);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace star
