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

// cwe's worked example and 6 copies of each common word take about 1,050 tokens of this test
// vocabulary (SmolLM2's: about 450), so it starts at 2K.
std::vector<int64_t> short_lengths(std::string_view task) {
  return task == "cwe" ? std::vector<int64_t>{2048, 4096} : std::vector<int64_t>{512, 1024};
}

TEST(RulerTasks, EveryTaskFitsItsLengthInTheModelsTokens) {
  for (const TaskInfo& t : ruler_tasks()) {
    for (int64_t length : short_lengths(t.name)) {
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
    const int64_t length = short_lengths(t.name).front();
    auto a = make(t.name, length, 4, 11);
    auto b = make(t.name, length, 4, 11);
    auto c = make(t.name, length, 4, 12);
    auto first_two = make(t.name, length, 2, 11);
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

// The names a chain of `letters`-letter names reaches from the value, followed in `text`
// independently of the generator.
std::set<std::string> chain_from(const std::string& text, const std::string& value, int letters) {
  const std::string name_re = "([A-Z]{" + std::to_string(letters) + "})";
  std::set<std::string> reached;
  std::smatch a;
  if (!std::regex_search(text, a, std::regex("VAR " + name_re + " = " + value + "\\."))) return reached;
  std::string name = a[1];
  reached.insert(name);
  while (std::regex_search(text, a, std::regex("VAR " + name_re + " = VAR " + name + "\\."))) {
    name = a[1];
    reached.insert(name);
  }
  return reached;
}

TEST(RulerTasks, VariableTrackingChainsEveryExpectedName) {
  for (const TaskSample& s : make("vt", 512, 4)) {
    EXPECT_EQ(s.context.rfind("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n", 0),
              0u)
        << "RULER's instruction opens the context";
    std::smatch m;
    ASSERT_TRUE(std::regex_search(s.query, m, std::regex("assigned the value (\\d+) in")));
    const std::set<std::string> reached = chain_from(s.context, m[1], 5);
    EXPECT_EQ(reached, std::set<std::string>(s.outputs.begin(), s.outputs.end()));
    EXPECT_EQ(reached.size(), 5u);
  }
}

// RULER's worked example: a whole vt prompt with 3-letter names, answered, before the task's own.
TEST(RulerTasks, VariableTrackingOpensWithAnAnsweredExample) {
  for (int64_t length : {2048, 4096}) {
    for (const TaskSample& s : make("vt", length, 3)) {
      const std::string instruction = "Memorize and track the chain(s) of variable assignment";
      const size_t task_start = s.context.rfind(instruction);
      ASSERT_NE(task_start, std::string::npos);
      ASSERT_GT(task_start, 0u) << "the example comes first";
      const std::string example = s.context.substr(0, task_start);
      std::smatch m;
      ASSERT_TRUE(std::regex_search(example, m,
                                    std::regex("assigned the value (\\d+), they are: ([A-Z]{3}) ([A-Z]{3}) ([A-Z]{3}) "
                                               "([A-Z]{3}) ([A-Z]{3})\n\n$")))
          << example.substr(example.size() - 200);
      const std::set<std::string> answer{m[2], m[3], m[4], m[5], m[6]};
      EXPECT_EQ(chain_from(example, m[1], 3), answer);
      // About 500 tokens (a noise sentence short of it at most, the answer's names beyond it).
      const auto example_tokens = static_cast<int64_t>(eval_tokenizer().encode(example).size());
      EXPECT_LE(example_tokens, 500 + 40);
      EXPECT_GE(example_tokens, 500 - 40);
    }
  }
}

// The numbered list after the last `header`, as word -> count, checking the numbering.
std::map<std::string, int> listed_after(const std::string& text, const std::string& header, size_t end = std::string::npos) {
  const size_t start = text.rfind(header, end) + header.size();
  const std::string list = text.substr(start, (end == std::string::npos ? text.size() : end) - start);
  std::map<std::string, int> counts;
  int expected_number = 1;
  const std::regex entry("(\\d+)\\. (\\w+)");
  for (std::sregex_iterator it(list.begin(), list.end(), entry), stop; it != stop; ++it) {
    EXPECT_EQ(std::stoi((*it)[1]), expected_number++);
    ++counts[(*it)[2]];
  }
  return counts;
}

TEST(RulerTasks, CommonWordsAreTheMostListedOnes) {
  const std::string header = "Memorize the ones that appear most often.\n";
  for (int64_t length : {2048, 4096}) {
    const int common_repeats = length >= 4096 ? 30 : 6, other_repeats = length >= 4096 ? 3 : 1;
    for (const TaskSample& s : make("cwe", length, 2)) {
      const std::map<std::string, int> counts = listed_after(s.context, header);
      for (const std::string& w : s.outputs) EXPECT_EQ(counts.at(w), common_repeats) << w;
      const std::set<std::string> common(s.outputs.begin(), s.outputs.end());
      int others_at_most_max = 0;
      for (const auto& [w, c] : counts) {
        if (common.contains(w)) continue;
        // The last words drawn may show fewer times than the others.
        EXPECT_LE(c, other_repeats) << w;
        others_at_most_max += c == other_repeats;
      }
      EXPECT_GT(others_at_most_max, 10);
      EXPECT_NE(s.query.find("the " + std::to_string(s.outputs.size()) + " most common"), std::string::npos);
      if (length >= 400) EXPECT_EQ(s.outputs.size(), 10u);
    }
  }
}

// RULER's worked example: a short list of its own, its question, and its answer, before the task.
TEST(RulerTasks, CommonWordsOpenWithAnAnsweredExample) {
  const std::string header = "Memorize the ones that appear most often.\n";
  for (int64_t length : {2048, 4096}) {
    for (const TaskSample& s : make("cwe", length, 2)) {
      const size_t task_start = s.context.rfind("Below is a numbered list of words.");
      ASSERT_GT(task_start, 0u);
      const std::string example = s.context.substr(0, task_start);
      const size_t question = example.find("\nQuestion: What are the 10 most common words in the above list?");
      ASSERT_NE(question, std::string::npos);
      const std::map<std::string, int> counts = listed_after(example, header, question);
      const int common_repeats = length >= 4096 ? 10 : 3;
      std::set<std::string> most;
      for (const auto& [w, c] : counts) {
        if (c == common_repeats) most.insert(w);
        else EXPECT_EQ(c, length >= 4096 ? 3 : 1) << w;
      }
      EXPECT_EQ(most.size(), 10u);
      EXPECT_EQ(counts.size(), length >= 4096 ? 40u : 20u);
      std::smatch m;
      const std::string after = example.substr(question);
      ASSERT_TRUE(std::regex_search(after, m, std::regex("are: (1\\. .*)\n$")));
      std::set<std::string> answered;
      const std::string listed = m[1];
      const std::regex entry("\\d+\\. (\\w+)");
      for (std::sregex_iterator it(listed.begin(), listed.end(), entry), stop; it != stop; ++it) answered.insert((*it)[1]);
      EXPECT_EQ(answered, most);
      for (const std::string& w : s.outputs) EXPECT_FALSE(counts.contains(w)) << "the task's words are not the example's";
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
    const int64_t length = short_lengths(t.name).front();
    auto samples = make_task_samples(t.name, *model->tokenizer, length, 2, 3);
    ASSERT_TRUE(samples.ok()) << samples.status().to_string();
    for (const TaskSample& s : *samples) {
      EXPECT_EQ(static_cast<int64_t>(model->tokenizer->encode(s.context, EncodeOptions{.add_bos = true}).size()),
                s.context_tokens);
      EXPECT_LE(s.context_tokens + s.query_tokens, length) << t.name;
    }
  }
}

}  // namespace
}  // namespace star::eval
