// RULER-style synthetic long-context tasks (Hsieh et al., 2024), templated in text and sized in the
// evaluated model's own tokens, so any model with a tokenizer can be evaluated.
//
// Needle tasks use one sentence form, " The special magic <kind> for <key> is <value>.", asked as
// "What is the special magic <kind> for <key>? The special magic <kind> for <key> is" (the
// answer prefix RULER uses: the model continues with the value).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"
#include "star/tokenizer/tokenizer.h"

namespace star::eval {

// How a prediction is scored against the expected strings (RULER's string_match_all / _part).
enum class Metric { kAll, kAny };
const char* metric_name(Metric metric);

struct TaskInfo {
  std::string_view name;
  std::string_view description;
  Metric metric;
};

// Every task, in table order: niah_single_1..3 (noise, essay and needle haystacks), niah_multikey_1..3,
// niah_multivalue, niah_multiquery, vt (variable tracking), cwe (common words), fwe (frequent words).
std::span<const TaskInfo> ruler_tasks();
Result<TaskInfo> find_task(std::string_view name);

struct TaskSample {
  std::string task;
  int index = 0;
  std::string context;                // star-run's input_context
  std::string query;                  // input_query: question and answer prefix
  std::string question;               // the query's two parts: a chat prompt asks the question in
  std::string answer_prefix;          // the user turn and opens the answer with the prefix
  std::vector<std::string> outputs;   // the strings a correct answer contains
  int64_t context_tokens = 0;         // as `tokenizer` encodes the context, BOS included
  int64_t query_tokens = 0;
};

struct TaskOptions {
  // Tokens the prompt format adds around the context and the query (a chat template's turns),
  // kept free of the length.
  int64_t prompt_tokens = 0;
  // Natural-text sentences (haystack_text.h) that the essay haystacks (niah_single_2/3,
  // niah_multikey_1, niah_multivalue, niah_multiquery) are read from, consecutively from a
  // sentence drawn per sample, and whose lowercase words cwe lists; empty: generated essay-like
  // sentences, and cwe's words from built-in lists.
  std::span<const std::string> prose;
};

// `count` samples of `task` whose context and query together take about `length` tokens of
// `tokenizer` (never more), less `options.prompt_tokens`. The same (task, length, count, seed,
// options) gives the same samples.
// Errors: an unknown task, or a length too short to hold the task's needles and question.
Result<std::vector<TaskSample>> make_task_samples(std::string_view task, const Tokenizer& tokenizer,
                                                  int64_t length, int count, uint64_t seed,
                                                  const TaskOptions& options = {});

}  // namespace star::eval
