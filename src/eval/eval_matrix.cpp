#include "star/eval/eval_matrix.h"

#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "star/attention/algorithm_registry.h"

namespace star::eval {
namespace {

// Pulsar runs once per chunk scoring, as pulsar-<scoring>.
constexpr std::string_view kPulsar = "pulsar";
constexpr std::string_view kScorings[] = {"max_idf", "tfidf", "bm25", "entropy", "even"};
constexpr std::string_view kPulsarPrefix = "pulsar-";

std::string percent(double v, bool signed_value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, signed_value ? "%+.1f" : "%.1f", 100.0 * v);
  return buf;
}

using Key = std::tuple<std::string, int64_t, std::string>;

std::optional<double> find_score(const std::map<Key, double>& scores, const std::string& task, int64_t length,
                                 const std::string& algorithm) {
  auto it = scores.find({task, length, algorithm});
  if (it == scores.end()) return std::nullopt;
  return it->second;
}

// The mean of one column over the complete rows: the tasks scored for every algorithm (a task too
// long for a length has no row there), so that every column averages the same tasks.
std::optional<double> column_mean(const std::map<Key, double>& scores, const std::vector<std::string>& tasks,
                                  int64_t length, const std::vector<std::string>& algorithms,
                                  const std::string& algorithm) {
  double sum = 0;
  int rows = 0;
  for (const std::string& t : tasks) {
    bool complete = true;
    for (const std::string& a : algorithms) complete = complete && find_score(scores, t, length, a).has_value();
    if (!complete) continue;
    sum += *find_score(scores, t, length, algorithm);
    ++rows;
  }
  return rows == 0 ? std::nullopt : std::optional<double>(sum / rows);
}

std::string table(const std::map<Key, double>& scores, const std::vector<std::string>& tasks, int64_t length,
                  const std::vector<std::string>& algorithms, bool relative) {
  std::string s = "| task |";
  std::string rule = "|---|";
  for (const std::string& a : algorithms) {
    s += " " + a + " |";
    rule += "---:|";
  }
  s += "\n" + rule + "\n";
  auto cell = [&](std::optional<double> v, std::optional<double> dense) {
    std::string c = " ";
    if (v && !relative) {
      c.append(percent(*v, false));
    } else if (v && dense) {
      c.append(percent(*v - *dense, true));
    } else {
      c.append("–");
    }
    return c.append(" |");
  };
  for (const std::string& t : tasks) {
    s += "| " + t + " |";
    for (const std::string& a : algorithms) {
      s += cell(find_score(scores, t, length, a), find_score(scores, t, length, "dense"));
    }
    s += "\n";
  }
  s += "| **mean** |";
  for (const std::string& a : algorithms) {
    s += cell(column_mean(scores, tasks, length, algorithms, a), column_mean(scores, tasks, length, algorithms, "dense"));
  }
  return s + "\n";
}

}  // namespace

std::vector<std::string> default_algorithms() {
  std::vector<std::string> names;
  for (bool exact : {true, false}) {
    for (const AlgorithmEntry& entry : algorithm_registry()) {
      if (entry.exact != exact) continue;
      if (entry.name != kPulsar) {
        names.emplace_back(entry.name);
        continue;
      }
      for (std::string_view s : kScorings) names.push_back(std::string(kPulsarPrefix) + std::string(s));
    }
  }
  return names;
}

Result<AttentionConfig> algorithm_config(std::string_view name, const AttentionConfig& base) {
  AttentionConfig c = base;
  if (name.starts_with(kPulsarPrefix)) {
    const std::string_view scoring = name.substr(kPulsarPrefix.size());
    for (std::string_view s : kScorings) {
      if (s == scoring) {
        c.algorithm = std::string(kPulsar);
        c.scoring = std::string(s);
        return c;
      }
    }
    return invalid_argument("algorithm \"" + std::string(name) +
                            "\": unknown Pulsar scoring (pulsar-max_idf, pulsar-tfidf, pulsar-bm25, pulsar-entropy, "
                            "pulsar-even)");
  }
  if (find_algorithm(name) == nullptr) {
    return invalid_argument("unknown algorithm \"" + std::string(name) + "\" (" + algorithm_names() +
                            ", pulsar-<scoring>)");
  }
  c.algorithm = std::string(name);
  return c;
}

AttentionConfig with_blocks(AttentionConfig config, int64_t context_tokens, int blocks) {
  const AlgorithmEntry* entry = find_algorithm(config.algorithm);
  if (entry != nullptr && entry->blocked && blocks > 0) {
    config.block_size = (context_tokens + blocks - 1) / blocks;
  }
  return config;
}

std::string markdown_tables(const std::vector<CellScore>& cells, const std::vector<std::string>& tasks,
                            const std::vector<int64_t>& lengths, const std::vector<std::string>& algorithms) {
  std::map<Key, double> scores;
  for (const CellScore& c : cells) scores[{c.task, c.length, c.algorithm}] = c.score;
  bool has_dense = false;
  for (const std::string& a : algorithms) has_dense = has_dense || a == "dense";
  std::string s;
  for (int64_t length : lengths) {
    s += "### " + std::to_string(length) + " tokens: score (%)\n\n" + table(scores, tasks, length, algorithms, false);
    if (has_dense) {
      s += "\n### " + std::to_string(length) + " tokens: difference to dense (points)\n\n" +
           table(scores, tasks, length, algorithms, true);
    }
    s += "\n";
  }
  return s;
}

}  // namespace star::eval
