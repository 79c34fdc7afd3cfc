#include "star/attention/pulsar_plan.h"

#include <algorithm>
#include <vector>

#include "star/attention/attention_config_io.h"
#include "star/attention/block_ranges.h"
#include "star/attention/plans/blocking.h"
#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

std::vector<int64_t> range_indices(TokenRange range) {
  std::vector<int64_t> indices(static_cast<size_t>(range.size()));
  for (int64_t i = 0; i < range.size(); ++i) indices[static_cast<size_t>(i)] = range.begin + i;
  return indices;
}

// One pass's tokens; positions are the context indices (sparse) or first_position, first_position+1,
// ... (contiguous).
EncodeStep make_step(EncodeStep::Kind kind, std::span<const int32_t> ids, const std::vector<int64_t>& indices,
                     bool contiguous, int64_t first_position, int block_index) {
  EncodeStep step;
  step.kind = kind;
  step.block_index = block_index;
  step.token_ids.reserve(indices.size());
  step.positions.reserve(indices.size());
  for (size_t t = 0; t < indices.size(); ++t) {
    step.token_ids.push_back(ids[static_cast<size_t>(indices[t])]);
    step.positions.push_back(static_cast<int32_t>(contiguous ? first_position + static_cast<int64_t>(t)
                                                             : indices[t]));
  }
  return step;
}

}  // namespace

Result<BlockPlan> build_pulsar_plan(std::span<const int32_t> context_ids, int n_ranks,
                                    const AttentionConfig& config,
                                    std::span<const uint8_t> sentence_ends) {
  if (Status s = validate_attention_config(config); !s.ok()) return s;
  const int64_t context_tokens = static_cast<int64_t>(context_ids.size());
  Result<BlockLayout> layout_or = split_into_blocks(context_tokens, config.block_size, n_ranks);
  if (!layout_or.ok()) return layout_or.status();
  if (Status s = snap_block_edges("pulsar", *layout_or, context_ids, sentence_ends, config.boundary_snap); !s.ok()) {
    return s;
  }
  const BlockLayout& layout = *layout_or;
  const std::vector<TokenRange>& blocks = layout.blocks;
  const int n_blocks = static_cast<int>(blocks.size());
  if (n_blocks == 0) {
    // An empty context: every rank holds [0, 0) and runs nothing.
    BlockPlan plan;
    plan.algorithm = "pulsar";
    plan.ranks.resize(static_cast<size_t>(n_ranks));
    return plan;
  }

  const bool contiguous = config.position_mode == "contiguous";
  const SummaryParams params{
      .scoring = *parse_summary_scoring(config.scoring),
      .chunk_tokens = config.chunk_tokens,
      // The block size, not B0's: a snapped edge may shorten B0 by a few tokens, and the budget
      // should not drop a chunk for it.
      .budget_chunks = summary_budget_chunks(config, layout.block_size),
      .sink_tokens = config.sink_tokens,
  };
  // The last block's summary would feed no pass.
  const std::vector<std::vector<int64_t>> summaries =
      select_summaries(context_ids, blocks, n_blocks - 1, params);
  const std::vector<int64_t> sink =
      range_indices({0, std::min(config.sink_tokens, blocks.front().size())});

  BlockPlan plan;
  plan.algorithm = "pulsar";
  plan.blocks = blocks;
  plan.context_tokens = context_tokens;
  plan.query_host = layout.query_host;

  // boundary_overlap: block i's pass reads the last tokens of block i-1 between the summaries and
  // Bi; their KV is not kept.
  const auto lead_of = [&](int i) {
    return i == 0 ? TokenRange{0, 0}
                  : TokenRange{std::max(blocks[i - 1].begin, blocks[i - 1].end - config.boundary_overlap),
                               blocks[i - 1].end};
  };

  // Longest pass: B0 alone, or [sink ‖ Σ0..Σi-1 ‖ lead ‖ Bi].
  int64_t longest_pass = blocks.front().size();
  int64_t prefix_tokens = static_cast<int64_t>(sink.size());
  for (int i = 1; i < n_blocks; ++i) {
    prefix_tokens += static_cast<int64_t>(summaries[i - 1].size());
    longest_pass = std::max(longest_pass, prefix_tokens + lead_of(i).size() + blocks[i].size());
  }
  plan.query_position_start = contiguous ? longest_pass : context_tokens;

  for (int r = 0; r < n_ranks; ++r) {
    RankPlan rank;
    rank.shard = layout.shard(r);
    rank.keep_prefix_kv = config.keep_prefix_kv;
    const BlockRun run = layout.rank_runs[static_cast<size_t>(r)];
    bool prefix_started = false;
    int64_t prefix_length = 0;
    for (int i = run.first; i < run.last; ++i) {
      const TokenRange lead = lead_of(i);
      const std::vector<int64_t> block = range_indices({lead.begin, blocks[i].end});
      if (i == 0) {
        rank.steps.push_back(make_step(EncodeStep::Kind::kEncodeBlock, context_ids, block, contiguous, 0, 0));
        continue;
      }
      std::vector<int64_t> extension;
      if (!prefix_started) {
        extension = sink;
        for (int j = 0; j < i; ++j) extension.insert(extension.end(), summaries[j].begin(), summaries[j].end());
        prefix_started = true;
      } else {
        extension = summaries[i - 1];
      }
      if (!extension.empty()) {
        rank.steps.push_back(
            make_step(EncodeStep::Kind::kExtendPrefix, context_ids, extension, contiguous, prefix_length, -1));
        prefix_length += static_cast<int64_t>(extension.size());
      }
      rank.steps.push_back(make_step(EncodeStep::Kind::kEncodeBlock, context_ids, block, contiguous, prefix_length, i));
      rank.steps.back().lead_tokens = lead.size();
    }
    plan.ranks.push_back(std::move(rank));
  }
  return plan;
}

}  // namespace star
