// The loads row sharing starts the ranks at (step_forward.h): each rank's Phase 1 chunk of the step,
// and what each query host spends attending its sequences' own tokens, counted key by key against
// the positions the rows sit at.
#include "star/engine/step_forward.h"

#include <gtest/gtest.h>

namespace star {
namespace {

StepSequence decoding_at(int host, int64_t query_start, int64_t next_position, int64_t rows,
                         AttentionWindow window = {}) {
  StepSequence s;
  s.phase = StepSequence::Phase::kDecoding;
  s.context.layout.query_host = host;
  s.context.layout.query_position_start = query_start;
  s.context.layout.window = window;
  s.next_position = next_position;
  s.pending.assign(static_cast<size_t>(rows), 7);
  return s;
}

TEST(Phase1ChunkLoads, RanksWithAChunkLeftCarryTheLimitsCost) {
  StepSequence encoding;
  encoding.rank_chunks = {3, 5};
  encoding.chunk_steps = 2;
  const ChunkLimit limit = ChunkLimit::by_tokens_and_cost(28, 25, 4096);
  EXPECT_EQ(phase1_chunk_loads(&encoding, 2, limit), (std::vector<double>{25.0, 25.0}));
  encoding.chunk_steps = 3;  // rank 0 ran its last chunk
  EXPECT_EQ(phase1_chunk_loads(&encoding, 2, limit), (std::vector<double>{0.0, 25.0}));
  encoding.chunk_steps = 5;
  EXPECT_EQ(phase1_chunk_loads(&encoding, 2, limit), (std::vector<double>{0.0, 0.0}));
}

TEST(Phase1ChunkLoads, ATokenLimitCountsItsTokensAndNoLimitOutweighsAnyRows) {
  StepSequence encoding;
  encoding.rank_chunks = {1, 0, 1};
  const std::vector<double> by_tokens = phase1_chunk_loads(&encoding, 3, ChunkLimit(64));
  EXPECT_EQ(by_tokens, (std::vector<double>{64.0, 0.0, 64.0}));
  const std::vector<double> whole = phase1_chunk_loads(&encoding, 3, ChunkLimit());
  EXPECT_EQ(whole[1], 0.0);
  EXPECT_EQ(whole[0], whole[2]);
  EXPECT_GT(whole[0], 1e6);
}

TEST(Phase1ChunkLoads, NoEncodingSequenceLoadsNoRank) {
  EXPECT_EQ(phase1_chunk_loads(nullptr, 2, ChunkLimit(8)), (std::vector<double>{0.0, 0.0}));
}

TEST(OwnAttentionLoads, EachRowAttendsTheOwnTokensUpToItself) {
  // A 3-row query at positions 100..102 of a query starting at 100: 1 + 2 + 3 keys. A decode row at
  // position 140 of a query starting at 120: 21 keys. Both on rank 1, 8 keys a row.
  StepSequence query = decoding_at(1, 100, 100, 3);
  StepSequence decode = decoding_at(1, 120, 140, 1);
  const std::vector<double> loads = own_attention_loads({&query, &decode}, 2, 8);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_DOUBLE_EQ(loads[0], 0.0);
  EXPECT_DOUBLE_EQ(loads[1], (6.0 + 21.0) / 8.0);
}

TEST(OwnAttentionLoads, EachHostCarriesItsOwnSequences) {
  StepSequence on0 = decoding_at(0, 0, 9, 1);
  StepSequence on2 = decoding_at(2, 50, 59, 1);
  const std::vector<double> loads = own_attention_loads({&on0, &on2}, 3, 5);
  EXPECT_EQ(loads, (std::vector<double>{2.0, 0.0, 2.0}));
}

TEST(OwnAttentionLoads, OwnTokensMovedOffTheQueryHostLoadTheirRank) {
  StepSequence moved = decoding_at(2, 50, 59, 1);
  moved.spec.own_host = 0;
  StepSequence stays = decoding_at(2, 50, 59, 1);
  EXPECT_EQ(own_attention_loads({&moved, &stays}, 3, 5), (std::vector<double>{2.0, 0.0, 2.0}));
}

TEST(OwnAttentionLoads, AWindowCapsTheKeysARowAttends) {
  // Row at own key 1,000 with a sink of 4 and a window of 96 attends 100 keys.
  StepSequence s = decoding_at(0, 0, 999, 1, AttentionWindow{.sink = 4, .window = 96});
  EXPECT_DOUBLE_EQ(own_attention_loads({&s}, 1, 10)[0], 10.0);
}

TEST(OwnAttentionLoads, AHostOutsideTheGroupAddsNothing) {
  StepSequence s = decoding_at(3, 0, 10, 1);
  EXPECT_EQ(own_attention_loads({&s}, 2, 1), (std::vector<double>{0.0, 0.0}));
}

}  // namespace
}  // namespace star
