#include "star/server/context_registry.h"

#include <gtest/gtest.h>

namespace star::server {
namespace {

ContextEntry entry(const std::string& id, std::vector<int64_t> rank_bytes, std::vector<int32_t> ids = {1, 2, 3}) {
  ContextEntry e;
  e.id = id;
  e.context_ids = std::make_shared<const std::vector<int32_t>>(std::move(ids));
  e.rank_bytes = std::move(rank_bytes);
  return e;
}

std::vector<std::string> ids_of(const std::vector<ContextEntry>& entries) {
  std::vector<std::string> out;
  for (const ContextEntry& e : entries) out.push_back(e.id);
  return out;
}

TEST(ContextRegistry, IdsAreFreshAndWellFormed) {
  ContextRegistry r(100, 2);
  const std::string a = r.next_id(), b = r.next_id();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("ctx-1-", 0), 0u);
  EXPECT_EQ(a.size(), std::string("ctx-1-").size() + 8);
}

TEST(ContextRegistry, AdmittingEvictsTheLeastRecentlyUsedUntilEveryRankFits) {
  ContextRegistry r(100, 2);
  ASSERT_TRUE(r.admit(entry("a", {40, 10})).ok());
  ASSERT_TRUE(r.admit(entry("b", {40, 10})).ok());
  ASSERT_TRUE(r.admit(entry("c", {10, 40})).ok());
  r.start_query("a");  // b is now the least recently used
  r.end_query("a");
  EXPECT_TRUE(r.take_released().empty());
  // Rank 0 holds 90; 30 more fits only without b (40).
  ASSERT_TRUE(r.admit(entry("d", {30, 5})).ok());
  EXPECT_EQ(ids_of(r.list()), (std::vector<std::string>{"d", "a", "c"}));
  EXPECT_EQ(r.take_released(), std::vector<std::string>{"b"});
  EXPECT_EQ(r.rank_bytes_used(), (std::vector<int64_t>{80, 55}));
  // Rank 1 decides this time: 55 + 50 > 100 evicts c (the oldest now), then fits.
  ASSERT_TRUE(r.admit(entry("e", {0, 50})).ok());
  EXPECT_EQ(r.take_released(), std::vector<std::string>{"c"});
  EXPECT_EQ(r.rank_bytes_used(), (std::vector<int64_t>{70, 65}));
}

TEST(ContextRegistry, AContextLargerThanTheBudgetIsRefusedWithoutEvictions) {
  ContextRegistry r(100, 2);
  ASSERT_TRUE(r.admit(entry("a", {60, 60})).ok());
  Status s = r.admit(entry("huge", {20, 101}));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("101 bytes on rank 1"), std::string::npos);
  EXPECT_EQ(ids_of(r.list()), std::vector<std::string>{"a"});
  EXPECT_TRUE(r.take_released().empty());
}

TEST(ContextRegistry, FindsTheSameContextByIdsAndConfiguration) {
  ContextRegistry r(1000, 1);
  AttentionConfig star;
  AttentionConfig dense;
  dense.algorithm = "dense";
  ContextEntry e = entry("a", {10}, {5, 6, 7});
  e.attention = star;
  ASSERT_TRUE(r.admit(e).ok());
  const std::vector<int32_t> same = {5, 6, 7}, other = {5, 6, 8}, shorter = {5, 6};
  EXPECT_EQ(r.find_same(same, star), std::optional<std::string>("a"));
  EXPECT_EQ(r.find_same(other, star), std::nullopt);
  EXPECT_EQ(r.find_same(shorter, star), std::nullopt);
  EXPECT_EQ(r.find_same(same, dense), std::nullopt);
  AttentionConfig star_blocks = star;
  star_blocks.block_size = 2;
  EXPECT_EQ(r.find_same(same, star_blocks), std::nullopt);
}

TEST(ContextRegistry, RemoveForgetsAtOnceAndQueuesTheRelease) {
  ContextRegistry r(1000, 1);
  ASSERT_TRUE(r.admit(entry("a", {10})).ok());
  EXPECT_TRUE(r.remove("a"));
  EXPECT_FALSE(r.remove("a"));
  EXPECT_FALSE(r.find("a").has_value());
  EXPECT_EQ(r.take_released(), std::vector<std::string>{"a"});
  EXPECT_TRUE(r.take_released().empty());
  EXPECT_EQ(r.rank_bytes_used(), std::vector<int64_t>{0});
}

TEST(ContextRegistry, QueriesAreCountedAndRunningUntilTheyEnd) {
  ContextRegistry r(1000, 1);
  ASSERT_TRUE(r.admit(entry("a", {10})).ok());
  r.start_query("a");
  r.start_query("a");
  r.end_query("a");
  r.start_query("missing");
  r.end_query("missing");
  EXPECT_EQ(r.find("a")->queries, 2);
  EXPECT_EQ(r.find("a")->running, 1);
  r.end_query("a");
  r.end_query("a");  // more ends than starts: stays at 0
  EXPECT_EQ(r.find("a")->running, 0);
}

TEST(ContextRegistry, AContextThatQueriesReadIsNotEvicted) {
  ContextRegistry r(100, 2);
  ASSERT_TRUE(r.admit(entry("a", {40, 10})).ok());
  ASSERT_TRUE(r.admit(entry("b", {40, 10})).ok());
  r.start_query("a");
  r.start_query("b");
  r.end_query("b");
  // a is the least recently used but running: c takes b's room instead.
  ASSERT_TRUE(r.admit(entry("c", {40, 10})).ok());
  EXPECT_EQ(r.take_released(), std::vector<std::string>{"b"});
  EXPECT_EQ(ids_of(r.list()), (std::vector<std::string>{"c", "a"}));
  // Rank 0: a (40, read) + 70 > 100 whatever goes, so nothing goes and the client is told why.
  Status s = r.admit(entry("d", {70, 10}));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("running queries read hold 40"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--context-cache-bytes"), std::string::npos);
  EXPECT_TRUE(r.take_released().empty());
  EXPECT_EQ(ids_of(r.list()), (std::vector<std::string>{"c", "a"}));
  // Once a's query ends it goes like any other.
  r.end_query("a");
  ASSERT_TRUE(r.admit(entry("d", {70, 10})).ok());
  EXPECT_EQ(r.take_released(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(r.rank_bytes_used(), (std::vector<int64_t>{70, 10}));
}

}  // namespace
}  // namespace star::server
