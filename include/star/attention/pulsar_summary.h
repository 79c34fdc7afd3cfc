// Pulsar block summaries: corpus statistics from the context's token ids (once per request, no
// model involved), chunk scoring, and the selection of each block's summary Σj as the context
// indices it keeps, in positional order.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

enum class SummaryScoring { kMaxIdf, kTfIdf, kBm25, kEntropy, kEven };

// "max_idf" | "tfidf" | "bm25" | "entropy" | "even"
Result<SummaryScoring> parse_summary_scoring(std::string_view name);

// Document frequencies with the blocks as documents: N = number of blocks, df(t) = number of blocks
// containing t.
class CorpusStats {
 public:
  CorpusStats(std::span<const int32_t> context_ids, std::span<const TokenRange> blocks);

  int64_t n_blocks() const { return n_blocks_; }
  int64_t df(int32_t token) const;
  double idf(int32_t token) const;       // ln(N / max(df, 1))
  double bm25_idf(int32_t token) const;  // ln((N - df + 0.5) / (df + 0.5) + 1)

 private:
  int64_t n_blocks_ = 0;
  std::unordered_map<int32_t, int64_t> df_;
};

// Non-overlapping chunks of chunk_tokens tiling `region` from its start. When the region is not a
// multiple of chunk_tokens the last chunk is shorter; it stays a candidate, scored on its own tokens
// (so a selected partial chunk gives the summary fewer tokens than the budget).
std::vector<TokenRange> split_into_chunks(TokenRange region, int64_t chunk_tokens);

// Chunk scores; `chunk` holds the chunk's token ids (non-empty). Each is a function of the chunk's
// multiset of tokens (sums run in token order), so chunks with the same tokens tie exactly.
double max_idf_score(std::span<const int32_t> chunk, const CorpusStats& stats);  // max IDF(t)
double tfidf_score(std::span<const int32_t> chunk, const CorpusStats& stats);    // mean IDF(t)
// Σ over distinct t of IDF'(t)·tf·(k1+1) / (tf + k1·(1 − b + b·|C|/avgdl)), k1 = 1.2, b = 0.75.
double bm25_score(std::span<const int32_t> chunk, const CorpusStats& stats, double avg_chunk_tokens);
double entropy_score(std::span<const int32_t> chunk);  // distinct tokens / |C|

// Indices of the k highest scores, ties going to the earlier index, returned in increasing order.
std::vector<size_t> top_k_chunks(std::span<const double> scores, int64_t k);

// floor(linspace(0, region_tokens - 1, count)) computed exactly in integers: offsets into a region of
// region_tokens (>= 1) tokens; count is clamped to region_tokens so no offset repeats.
std::vector<int64_t> even_offsets(int64_t region_tokens, int64_t count);

// Summary size k in chunks: summary_chunks when > 0, else floor(round(summary_fraction ·
// block_tokens) / chunk_tokens), so a summary never exceeds the fraction of the block.
int64_t summary_budget_chunks(const AttentionConfig& config, int64_t block_tokens);

struct SummaryParams {
  SummaryScoring scoring = SummaryScoring::kMaxIdf;
  int64_t chunk_tokens = 32;
  int64_t budget_chunks = 0;  // k; `even` takes k · chunk_tokens single tokens
  int64_t sink_tokens = 0;    // first tokens of block 0: never part of Σ0 (already the sink)
};

// Σ0 .. Σ(count-1) for the first `count` blocks, each the increasing context indices it keeps. The
// selection region of block j is the block, less the sink for block 0. Corpus statistics (and BM25's
// avgdl, the mean length of every block's chunks) come from all blocks.
std::vector<std::vector<int64_t>> select_summaries(std::span<const int32_t> context_ids,
                                                   std::span<const TokenRange> blocks, int count,
                                                   const SummaryParams& params);

}  // namespace star
