// Which rank computes which shared rows (row_sharing.h); the exchange itself across ranks is
// tests/mpi/row_sharing.cpp.
#include "star/model/row_sharing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "star/dist/self_communicator.h"

namespace star {
namespace {

TEST(RowSharing, GroupsGoWholeToTheLeastLoadedRank) {
  // Loads after each group: [3,0] [3,1] [3,2] [3,6] [5,6].
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{3, 1, 1, 4, 2}, 2),
            (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{1, 1, 1, 1, 1}, 3), (std::vector<int32_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{2, 0, 1}, 1), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_TRUE(balanced_row_owners({}, 2).empty());
}

TEST(RowSharing, ARankThatStartsLoadedTakesFewerRows) {
  // Loads after each group: [1, 2.5] [2, 2.5] [3, 2.5] [3, 3.5].
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{1, 1, 1, 1}, 2, std::vector<double>{0, 2.5}),
            (std::vector<int32_t>{0, 0, 0, 1}));
  // Past the most it can take, a loaded rank takes none.
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{2, 1}, 2, std::vector<double>{0, 9}),
            (std::vector<int32_t>{0, 0, 0}));
  // Ranks the loads leave out start at zero: [0.5, 1] [0.5, 1, 1] -> [1.5, 1, 1] [1.5, 2, 1] [1.5, 2, 2].
  EXPECT_EQ(balanced_row_owners(std::vector<int64_t>{1, 1, 1, 1}, 3, std::vector<double>{0.5}),
            (std::vector<int32_t>{1, 2, 0, 1}));
}

TEST(RowSharing, ColumnSlicesCoverTheProductInRankOrderFromPanelEdges) {
  // 768 columns are 24 units of 32: 8 a rank on three, 6 on four.
  EXPECT_EQ(column_slice(768, 0, 3).first, 0);
  EXPECT_EQ(column_slice(768, 1, 3).first, 256);
  EXPECT_EQ(column_slice(768, 2, 3).count, 256);
  EXPECT_EQ(column_slice(768, 3, 4).first, 576);
  for (const int64_t width : {1, 16, 32, 100, 172, 768, 2048}) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ColumnSlice slice = column_slice(width, r, ranks);
        EXPECT_EQ(slice.first, next) << width << " columns, rank " << r << " of " << ranks;
        EXPECT_GE(slice.count, 0);
        EXPECT_TRUE(slice.first % 32 == 0 || slice.count == 0) << width << " columns, rank " << r << " of " << ranks;
        next = slice.first + slice.count;
      }
      EXPECT_EQ(next, width) << width << " columns on " << ranks << " ranks";
    }
  }
  // Fewer units than ranks: the first ranks get none.
  EXPECT_EQ(column_slice(32, 0, 2).count, 0);
  EXPECT_EQ(column_slice(32, 1, 2).count, 32);
}

TEST(RowSharing, ColumnsSharedOnOneRankAreTheSlice) {
  SelfCommunicator self;
  const std::vector<float> slice{1, 2, 3, 4, 5, 6};
  std::vector<float> whole(6, 0.f);
  const ColumnPiece piece{slice.data(), whole.data(), 3};
  ASSERT_TRUE(share_columns(self, 2, {&piece, 1}).ok());
  EXPECT_EQ(whole, slice);
}

TEST(RowSharing, ColumnBlocksSharedOnOneRankAreTheSlice) {
  SelfCommunicator self;
  std::vector<quant::BlockQ8_0> slice(4), whole(4);
  for (size_t b = 0; b < slice.size(); ++b) {
    slice[b].d = static_cast<uint16_t>(100 + b);
    for (int j = 0; j < quant::kLegacyBlock; ++j) slice[b].qs[j] = static_cast<int8_t>(b * 40 + j);
  }
  ASSERT_TRUE(share_column_blocks(self, 2, {slice.data(), whole.data(), 2 * quant::kLegacyBlock}).ok());
  for (size_t b = 0; b < slice.size(); ++b) {
    EXPECT_EQ(whole[b].d, slice[b].d) << "block " << b;
    EXPECT_TRUE(std::equal(std::begin(whole[b].qs), std::end(whole[b].qs), std::begin(slice[b].qs))) << "block " << b;
  }
}

TEST(RowSharing, RowsComputedHereAreTheOwnOnesAndTheOwnedShared) {
  SelfCommunicator self;
  const RowSharing sharing{.comm = &self, .first_shared = 2, .owner = {0, 0, 0}};
  auto rows = rows_computed_here(sharing, 5);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  EXPECT_EQ(*rows, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(rows_computed_here(sharing, 6).status().code(), StatusCode::kInvalidArgument);
  const RowSharing stranger{.comm = &self, .first_shared = 0, .owner = {1}};
  const Status refused = rows_computed_here(stranger, 1).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("shared row 0 has owner rank 1 outside [0, 1)"), std::string::npos)
      << refused.to_string();
}

}  // namespace
}  // namespace star
