// RULER's string-match scores, against values worked out by hand from RULER's definitions
// (string_match_all: mean over references of "reference in prediction"; string_match_part: max).
#include <gtest/gtest.h>

#include "star/eval/ruler_scoring.h"

namespace star::eval {
namespace {

TEST(RulerScoring, AllCountsTheFractionOfExpectedStringsPresent) {
  const std::vector<std::string> refs = {"12345", "67890", "ABCDE", "fghij"};
  EXPECT_DOUBLE_EQ(score_all(" 12345, 67890, abcde and FGHIJ", refs), 1.0);
  EXPECT_DOUBLE_EQ(score_all(" 12345 and 6789", refs), 0.25);
  EXPECT_DOUBLE_EQ(score_all(" 67890 abcde", refs), 0.5);
  EXPECT_DOUBLE_EQ(score_all("", refs), 0.0);
  EXPECT_DOUBLE_EQ(score_all("anything", {}), 0.0);
}

TEST(RulerScoring, AnyIsOneWhenOneExpectedStringIsPresent) {
  const std::vector<std::string> refs = {"Paris", "Lyon"};
  EXPECT_DOUBLE_EQ(score_any("it is lyon, I think", refs), 1.0);
  EXPECT_DOUBLE_EQ(score_any("PARIS and LYON", refs), 1.0);
  EXPECT_DOUBLE_EQ(score_any("Marseille", refs), 0.0);
}

TEST(RulerScoring, SubstringsCountAsRulerCountsThem) {
  // RULER tests containment, not word boundaries: "123456" contains "12345".
  EXPECT_DOUBLE_EQ(score_all(" 123456", std::vector<std::string>{"12345"}), 1.0);
  EXPECT_DOUBLE_EQ(score(Metric::kAll, " 1234", std::vector<std::string>{"12345"}), 0.0);
  EXPECT_DOUBLE_EQ(score(Metric::kAny, "x 12345", std::vector<std::string>{"12345", "99999"}), 1.0);
  EXPECT_DOUBLE_EQ(score(Metric::kAll, "x 12345", std::vector<std::string>{"12345", "99999"}), 0.5);
}

}  // namespace
}  // namespace star::eval
