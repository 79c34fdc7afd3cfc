// RULER-style task generation: sizes in the model's tokens, determinism, and that each task's
// expected answers are really what its text says (checked by parsing the text back).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "eval_test_util.h"
#include "star/eval/ruler_tasks.h"
#include "star/engine/runtime_model.h"

namespace star::eval {
namespace {

using star::testing::eval_tokenizer;

std::vector<TaskSample> make(std::string_view task, int64_t length, int count, uint64_t seed = 7) {
  auto s = make_task_samples(task, eval_tokenizer(), length, count, seed);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? *s : std::vector<TaskSample>{};
}

int occurrences(const std::string& text, const std::string& piece) {
  int n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

// The key a needle question asks about ("What is the special magic number for KEY? ...").
std::string asked_key(const std::string& query) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(query, m, std::regex("special magic \\w+ for ([a-z ]+)\\?"))) << query;
  return m[1];
}

TEST(RulerTasks, EveryTaskFitsItsLengthInTheModelsTokens) {
  for (const TaskInfo& t : ruler_tasks()) {
    for (int64_t length : {512, 1024}) {
      for (const TaskSample& s : make(t.name, length, 3)) {
        EXPECT_EQ(s.task, t.name);
        const auto context_ids = eval_tokenizer().encode(s.context, EncodeOptions{.add_bos = true});
        EXPECT_EQ(static_cast<int64_t>(context_ids.size()), s.context_tokens) << t.name;
        EXPECT_EQ(static_cast<int64_t>(eval_tokenizer().encode(s.query).size()), s.query_tokens) << t.name;
        EXPECT_LE(s.context_tokens + s.query_tokens, length) << t.name;
        // Filler pads the needle tasks to within a sentence of the length.
        if (t.name.starts_with("niah")) EXPECT_GE(s.context_tokens + s.query_tokens, length - 40) << t.name;
        EXPECT_FALSE(s.outputs.empty()) << t.name;
      }
    }
  }
}

TEST(RulerTasks, SameSeedSameSamplesOtherSeedOthers) {
  for (const TaskInfo& t : ruler_tasks()) {
    auto a = make(t.name, 512, 4, 11);
    auto b = make(t.name, 512, 4, 11);
    auto c = make(t.name, 512, 4, 12);
    auto first_two = make(t.name, 512, 2, 11);
    ASSERT_EQ(a.size(), 4u);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].context, b[i].context) << t.name;
      EXPECT_EQ(a[i].query, b[i].query) << t.name;
      EXPECT_EQ(a[i].outputs, b[i].outputs) << t.name;
      EXPECT_NE(a[i].context, c[i].context) << t.name;
      EXPECT_EQ(a[i].index, static_cast<int>(i));
    }
    // Sample i does not depend on how many samples were asked for.
    EXPECT_EQ(first_two[1].context, a[1].context) << t.name;
    EXPECT_NE(a[0].context, a[1].context) << t.name;
  }
}

TEST(RulerTasks, SingleNeedleHoldsTheAskedKeysValueOnce) {
  for (std::string_view task : {"niah_single_1", "niah_single_2", "niah_single_3"}) {
    for (const TaskSample& s : make(task, 512, 5)) {
      ASSERT_EQ(s.outputs.size(), 1u);
      const std::string key = asked_key(s.query);
      EXPECT_EQ(occurrences(s.context, "The special magic"), 1) << s.context;
      EXPECT_EQ(occurrences(s.context, " for " + key + " is " + s.outputs[0] + "."), 1) << s.context;
      EXPECT_TRUE(s.query.ends_with(" for " + key + " is")) << s.query;
    }
  }
}

TEST(RulerTasks, MultiKeyDistractorsNeverShareTheAskedKeysLastWord) {
  const std::regex needle("The special magic (\\w+) for ([a-z ]+) is (\\w+)\\.");
  for (auto [task, needles] : {std::pair{"niah_multikey_1", 4}, {"niah_multikey_2", -1}, {"niah_multikey_3", -1}}) {
    for (const TaskSample& s : make(task, 512, 5)) {
      const std::string key = asked_key(s.query);
      const std::string last = key.substr(key.rfind(' ') + 1);
      int total = 0, matching = 0;
      for (std::sregex_iterator it(s.context.begin(), s.context.end(), needle), end; it != end; ++it) {
        ++total;
        const std::string k = (*it)[2];
        if (k.substr(k.rfind(' ') + 1) == last) {
          ++matching;
          EXPECT_EQ(k, key);
          EXPECT_EQ((*it)[3], s.outputs[0]);
        }
      }
      EXPECT_EQ(matching, 1) << task;
      if (needles > 0) EXPECT_EQ(total, needles) << task;
      if (needles < 0) EXPECT_GT(total, 10) << task << ": the haystack is made of needles";
    }
  }
}

TEST(RulerTasks, MultiValueAndMultiQueryExpectEveryAskedValue) {
  for (const TaskSample& s : make("niah_multivalue", 512, 3)) {
    const std::string key = asked_key(s.query);
    ASSERT_EQ(s.outputs.size(), 4u);
    for (const std::string& v : s.outputs) EXPECT_EQ(occurrences(s.context, " for " + key + " is " + v + "."), 1);
  }
  for (const TaskSample& s : make("niah_multiquery", 512, 3)) {
    ASSERT_EQ(s.outputs.size(), 4u);
    for (const std::string& v : s.outputs) {
      std::smatch m;
      ASSERT_TRUE(std::regex_search(s.context, m, std::regex(" for ([a-z ]+) is " + v + "\\.")));
      EXPECT_NE(s.query.find(m[1].str()), std::string::npos) << "the query asks for " << m[1];
    }
  }
}

TEST(RulerTasks, VariableTrackingChainsEveryExpectedName) {
  for (const TaskSample& s : make("vt", 512, 4)) {
    EXPECT_EQ(s.context.rfind("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n", 0),
              0u)
        << "RULER's instruction opens the context";
    std::smatch m;
    ASSERT_TRUE(std::regex_search(s.query, m, std::regex("assigned the value (\\d+) in")));
    // Follow the chain in the text from the value, independently of the generator.
    std::set<std::string> reached;
    std::string value = m[1];
    std::smatch a;
    ASSERT_TRUE(std::regex_search(s.context, a, std::regex("VAR ([A-Z]{5}) = " + value + "\\.")));
    std::string name = a[1];
    reached.insert(name);
    while (std::regex_search(s.context, a, std::regex("VAR ([A-Z]{5}) = VAR " + name + "\\."))) {
      name = a[1];
      reached.insert(name);
    }
    EXPECT_EQ(reached, std::set<std::string>(s.outputs.begin(), s.outputs.end()));
    EXPECT_EQ(reached.size(), 5u);
  }
}

TEST(RulerTasks, CommonWordsAreTheMostListedOnes) {
  for (int64_t length : {512, 1024}) {
    for (const TaskSample& s : make("cwe", length, 3)) {
      std::map<std::string, int> counts;
      const std::regex entry("(\\d+)\\. (\\w+)\n");
      int expected_number = 1;
      for (std::sregex_iterator it(s.context.begin(), s.context.end(), entry), end; it != end; ++it) {
        EXPECT_EQ(std::stoi((*it)[1]), expected_number++);
        ++counts[(*it)[2]];
      }
      for (const std::string& w : s.outputs) EXPECT_EQ(counts[w], 3) << w;
      const std::set<std::string> common(s.outputs.begin(), s.outputs.end());
      for (const auto& [w, c] : counts) {
        if (!common.contains(w)) EXPECT_EQ(c, 1) << w;
      }
      EXPECT_NE(s.query.find("the " + std::to_string(s.outputs.size()) + " most common"), std::string::npos);
      if (length >= 400) EXPECT_EQ(s.outputs.size(), 10u);
    }
  }
}

TEST(RulerTasks, FrequentWordsAreTheThreeMostFrequentInOrder) {
  for (const TaskSample& s : make("fwe", 1024, 3)) {
    const std::string text = s.context.substr(s.context.find('\n') + 1);
    std::map<std::string, int> counts;
    const std::regex word("\\S+");
    for (std::sregex_iterator it(text.begin(), text.end(), word), end; it != end; ++it) ++counts[it->str()];
    std::vector<std::pair<int, std::string>> ranked;
    for (const auto& [w, c] : counts) ranked.push_back({c, w});
    std::sort(ranked.rbegin(), ranked.rend());
    ASSERT_GE(ranked.size(), 4u);
    EXPECT_GT(ranked[2].first, ranked[3].first);
    EXPECT_EQ(s.outputs, (std::vector<std::string>{ranked[0].second, ranked[1].second, ranked[2].second}));
  }
}

TEST(RulerTasks, BadRequestsAreNamed) {
  auto unknown = make_task_samples("niah_single_9", eval_tokenizer(), 512, 1, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown task \"niah_single_9\""), std::string::npos);
  auto short_length = make_task_samples("niah_multiquery", eval_tokenizer(), 40, 1, 1);
  ASSERT_FALSE(short_length.ok());
  EXPECT_NE(short_length.status().message().find("too short for task niah_multiquery"), std::string::npos);
  EXPECT_FALSE(make_task_samples("vt", eval_tokenizer(), 512, 0, 1).ok());
}

TEST(RulerTasks, AnyModelsTokenizerSizesTheTasks) {
  STAR_REQUIRE_STORIES260K(dir);
  auto model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (const TaskInfo& t : ruler_tasks()) {
    auto samples = make_task_samples(t.name, *model->tokenizer, 512, 2, 3);
    ASSERT_TRUE(samples.ok()) << samples.status().to_string();
    for (const TaskSample& s : *samples) {
      EXPECT_EQ(static_cast<int64_t>(model->tokenizer->encode(s.context, EncodeOptions{.add_bos = true}).size()),
                s.context_tokens);
      EXPECT_LE(s.context_tokens + s.query_tokens, 512) << t.name;
    }
  }
}

}  // namespace
}  // namespace star::eval
