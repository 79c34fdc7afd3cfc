// The evaluation matrix: which attention configurations star-eval compares, and the Markdown table
// of their scores (task x algorithm, one table per length).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"

namespace star::eval {

// Every registered algorithm (algorithm_registry.h), the exact ones first, each once except Pulsar,
// which runs as "pulsar-<scoring>" for each scoring (max_idf, tfidf, bm25, entropy, even).
std::vector<std::string> default_algorithms();

// `base` (the parameters from flags or a config file) with the algorithm, and the scoring for
// pulsar-<scoring>, of `name`. Errors name the unknown algorithm or scoring.
Result<AttentionConfig> algorithm_config(std::string_view name, const AttentionConfig& base);

// The configuration for one context: blocked algorithms (the registry's `blocked`) split
// `context_tokens` into `blocks` blocks of ceil(context_tokens / blocks) tokens (the last one shorter).
AttentionConfig with_blocks(AttentionConfig config, int64_t context_tokens, int blocks);

struct CellScore {
  std::string task;
  int64_t length = 0;
  std::string algorithm;
  double score = 0;  // mean over samples, in [0, 1]
  int samples = 0;
};

// One table per length: a row per task plus the mean row (over the tasks scored for every
// algorithm), a column per algorithm, scores in percent, "–" where a cell has no score; then the
// same as differences to dense when dense was run.
std::string markdown_tables(const std::vector<CellScore>& cells, const std::vector<std::string>& tasks,
                            const std::vector<int64_t>& lengths, const std::vector<std::string>& algorithms);

}  // namespace star::eval
