#include <algorithm>
#include <cmath>
#include <string>

#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

// The tokens of block j that may enter Σj: block 0 loses its sink, which every later pass already
// sees in full.
TokenRange selection_region(std::span<const TokenRange> blocks, size_t j, int64_t sink_tokens) {
  TokenRange region = blocks[j];
  if (j == 0) region.begin = std::min(region.end, region.begin + sink_tokens);
  return region;
}

double score_chunk(SummaryScoring scoring, std::span<const int32_t> chunk, const CorpusStats& stats,
                   double avg_chunk_tokens) {
  switch (scoring) {
    case SummaryScoring::kMaxIdf: return max_idf_score(chunk, stats);
    case SummaryScoring::kTfIdf: return tfidf_score(chunk, stats);
    case SummaryScoring::kBm25: return bm25_score(chunk, stats, avg_chunk_tokens);
    case SummaryScoring::kEntropy: return entropy_score(chunk);
    case SummaryScoring::kEven: break;
  }
  return 0.0;
}

std::vector<int64_t> top_chunk_indices(std::span<const int32_t> ids, const std::vector<TokenRange>& chunks,
                                       const SummaryParams& params, const CorpusStats& stats,
                                       double avg_chunk_tokens) {
  std::vector<double> scores;
  scores.reserve(chunks.size());
  for (const TokenRange& c : chunks) {
    scores.push_back(score_chunk(params.scoring, ids.subspan(c.begin, c.size()), stats, avg_chunk_tokens));
  }
  std::vector<int64_t> indices;
  for (size_t c : top_k_chunks(scores, params.budget_chunks)) {
    for (int64_t t = chunks[c].begin; t < chunks[c].end; ++t) indices.push_back(t);
  }
  return indices;
}

}  // namespace

Result<SummaryScoring> parse_summary_scoring(std::string_view name) {
  if (name == "max_idf") return SummaryScoring::kMaxIdf;
  if (name == "tfidf") return SummaryScoring::kTfIdf;
  if (name == "bm25") return SummaryScoring::kBm25;
  if (name == "entropy") return SummaryScoring::kEntropy;
  if (name == "even") return SummaryScoring::kEven;
  return invalid_argument("scoring = \"" + std::string(name) +
                          "\" is not one of max_idf, tfidf, bm25, entropy, even");
}

int64_t summary_budget_chunks(const AttentionConfig& config, int64_t block_tokens) {
  if (config.summary_chunks > 0) return config.summary_chunks;
  const int64_t budget_tokens = std::llround(config.summary_fraction * static_cast<double>(block_tokens));
  return budget_tokens / config.chunk_tokens;
}

std::vector<std::vector<int64_t>> select_summaries(std::span<const int32_t> context_ids,
                                                   std::span<const TokenRange> blocks, int count,
                                                   const SummaryParams& params) {
  std::vector<std::vector<TokenRange>> chunks(blocks.size());
  int64_t chunked_tokens = 0;
  int64_t chunk_count = 0;
  for (size_t j = 0; j < blocks.size(); ++j) {
    const TokenRange region = selection_region(blocks, j, params.sink_tokens);
    chunks[j] = split_into_chunks(region, params.chunk_tokens);
    chunked_tokens += region.size();
    chunk_count += static_cast<int64_t>(chunks[j].size());
  }
  const double avg_chunk_tokens =
      chunk_count > 0 ? static_cast<double>(chunked_tokens) / static_cast<double>(chunk_count) : 0.0;
  const CorpusStats stats(context_ids, blocks);

  std::vector<std::vector<int64_t>> summaries;
  summaries.reserve(static_cast<size_t>(std::max(count, 0)));
  for (size_t j = 0; j < static_cast<size_t>(std::max(count, 0)); ++j) {
    if (params.scoring == SummaryScoring::kEven) {
      const TokenRange region = selection_region(blocks, j, params.sink_tokens);
      std::vector<int64_t> indices = even_offsets(region.size(), params.budget_chunks * params.chunk_tokens);
      for (int64_t& i : indices) i += region.begin;
      summaries.push_back(std::move(indices));
    } else {
      summaries.push_back(top_chunk_indices(context_ids, chunks[j], params, stats, avg_chunk_tokens));
    }
  }
  return summaries;
}

}  // namespace star
