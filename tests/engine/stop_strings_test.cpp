#include "star/engine/stop_strings.h"

#include <gtest/gtest.h>

namespace star {
namespace {

// Feeds pieces one at a time and returns everything emitted.
std::string feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    out += m.push(p);
    if (m.stopped()) return out;
  }
  return out + m.flush();
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStringMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, StopSplitAcrossPiecesIsNeverEmitted) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.push("hello E"), "hello ");  // "E" might start "END"
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("D and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, HeldBackTextIsReleasedWhenItCannotBecomeAStop) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.push("E"), "");
  EXPECT_EQ(m.push("X"), "EX");
  EXPECT_EQ(feed(m, {"EN", "Z"}), "ENZ");
}

TEST(StopStrings, EarliestOfSeveralStopsWins) {
  StopStringMatcher m({"world", "lo w"});
  EXPECT_EQ(feed(m, {"hel", "lo world"}), "hel");
  EXPECT_TRUE(m.stopped());
}

TEST(StopStrings, UnfinishedPrefixIsFlushedAtTheEnd) {
  StopStringMatcher m({"</answer>"});
  EXPECT_EQ(feed(m, {"42 </ans"}), "42 </ans");
  EXPECT_FALSE(m.stopped());
}

TEST(StopStrings, StopAtTheVeryStart) {
  StopStringMatcher m({"\n\n"});
  EXPECT_EQ(feed(m, {"\n", "\nrest"}), "");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace star
