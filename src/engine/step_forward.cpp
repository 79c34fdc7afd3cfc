#include "star/engine/step_forward.h"

#include <algorithm>
#include <numeric>
#include <span>

#include "star/engine/sampler.h"

namespace star {
namespace {

// The whole [rows, vocab] logits from every rank's slice (vocab_slice_of_rank): one all-gather of
// equal parts, each slice padded to the longest. `keep`: assemble them here; otherwise null.
Result<std::vector<float>> gather_vocab_slices(Communicator& comm, const std::vector<float>& slice, int64_t rows,
                                               int64_t vocab, bool keep) {
  const int ranks = comm.size();
  const int64_t widest = vocab_slice_of_rank(vocab, 0, ranks).count;
  const int64_t own = vocab_slice_of_rank(vocab, comm.rank(), ranks).count;
  std::vector<float> send(static_cast<size_t>(rows * widest));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(slice.data() + r * own, own, send.data() + r * widest);
  }
  std::vector<float> parts(send.size() * static_cast<size_t>(ranks));
  if (Status s = comm.all_gather(send, parts); !s.ok()) return s;
  std::vector<float> whole;
  if (!keep) return whole;
  whole.resize(static_cast<size_t>(rows * vocab));
  for (int p = 0; p < ranks; ++p) {
    const VocabSlice part = vocab_slice_of_rank(vocab, p, ranks);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(parts.data() + (p * rows + r) * widest, part.count, whole.data() + r * vocab + part.first);
    }
  }
  return whole;
}

// Greedy rows need only their largest logit: each rank sends one candidate a row from its slice
// (greedy_candidate), 8 bytes instead of the slice's vocab / ranks floats, and the sampling rank
// (`keep`) picks each row's token among them; otherwise empty.
Result<std::vector<int32_t>> gather_greedy_tokens(Communicator& comm, const std::vector<float>& slice, int64_t rows,
                                                  int64_t vocab, bool keep) {
  const int ranks = comm.size();
  const VocabSlice own = vocab_slice_of_rank(vocab, comm.rank(), ranks);
  std::vector<GreedyCandidate> send(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    send[static_cast<size_t>(r)] = greedy_candidate(
        std::span<const float>(slice.data() + r * own.count, static_cast<size_t>(own.count)),
        static_cast<int32_t>(own.first));
  }
  std::vector<GreedyCandidate> parts(send.size() * static_cast<size_t>(ranks));
  if (Status s = comm.all_gather(send.data(), send.size() * sizeof(GreedyCandidate), parts.data()); !s.ok()) return s;
  std::vector<int32_t> tokens;
  if (!keep) return tokens;
  std::vector<GreedyCandidate> row(static_cast<size_t>(ranks));
  for (int64_t r = 0; r < rows; ++r) {
    for (int p = 0; p < ranks; ++p) row[static_cast<size_t>(p)] = parts[static_cast<size_t>(p * rows + r)];
    tokens.push_back(greedy_token(row));
  }
  return tokens;
}

// Whether every decoding sequence is sampled greedily and none returns its query logits this step
// (so each has one logit row, of which only the argmax is needed).
bool greedy_rows_only(const std::vector<StepSequence*>& decoding) {
  return std::all_of(decoding.begin(), decoding.end(), [](const StepSequence* s) {
    return s->spec.generation.sampling.temperature == 0.f && !(s->first_rows && s->spec.generation.return_query_logits);
  });
}

}  // namespace

std::vector<double> phase1_chunk_loads(const StepSequence* encoding, int ranks, const ChunkLimit& limit) {
  // Unlimited: far past any batch of rows, and the same on every rank that has one, so that rows
  // still spread evenly over those.
  constexpr double kWholePart = 1e9;
  const double chunk = limit.max_cost > 0    ? static_cast<double>(limit.max_cost)
                       : limit.max_tokens > 0 ? static_cast<double>(limit.max_tokens)
                                              : kWholePart;
  std::vector<double> load(static_cast<size_t>(std::max(ranks, 0)), 0.0);
  if (encoding == nullptr) return load;
  for (size_t r = 0; r < load.size() && r < encoding->rank_chunks.size(); ++r) {
    if (encoding->chunk_steps < encoding->rank_chunks[r]) load[r] = chunk;
  }
  return load;
}

double own_attention_load(const StepSequence& s, int64_t rows, int64_t keys_per_token) {
  const AttentionWindow& window = s.context.layout.window;
  double keys = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t own = s.own_rows() + i + 1;
    keys += static_cast<double>(window.bounded() ? std::min(own, window.sink + window.window) : own);
  }
  return keys / static_cast<double>(std::max<int64_t>(keys_per_token, 1));
}

std::vector<double> own_attention_loads(const std::vector<StepSequence*>& decoding, int ranks,
                                        int64_t keys_per_token) {
  std::vector<double> load(static_cast<size_t>(std::max(ranks, 0)), 0.0);
  for (const StepSequence* s : decoding) {
    const int host = s->own_host();
    if (host < 0 || host >= ranks) continue;
    load[static_cast<size_t>(host)] += own_attention_load(*s, static_cast<int64_t>(s->pending.size()), keys_per_token);
  }
  return load;
}

Result<StepForward> run_step_forward(EngineModel& model, Communicator& comm, const Phase1Chunk* chunk,
                                     const std::vector<StepSequence*>& decoding, bool keep_logits,
                                     const std::vector<double>& chunk_loads) {
  StepForward out;
  std::vector<int32_t> tokens, positions;
  std::vector<int64_t> logit_rows;
  std::vector<RowPart> parts;
  if (chunk) {
    tokens.assign(chunk->tokens.begin(), chunk->tokens.end());
    positions.assign(chunk->positions.begin(), chunk->positions.end());
    parts.push_back({chunk->attention, static_cast<int64_t>(chunk->tokens.size())});
  }

  if (!decoding.empty()) {
    std::vector<QuerySlot> slots;
    int64_t phase2_rows = 0;
    for (StepSequence* s : decoding) {
      const auto rows = static_cast<int64_t>(s->pending.size());
      const int64_t first_row = static_cast<int64_t>(tokens.size());
      tokens.insert(tokens.end(), s->pending.begin(), s->pending.end());
      for (int64_t i = 0; i < rows; ++i) positions.push_back(static_cast<int32_t>(s->next_position + i));
      const SkipSoftmaxConfig& skip = s->context.layout.skip_softmax;
      const int query_host = s->context.layout.query_host;
      const bool own_moved = s->own_host() != query_host;
      slots.push_back({.context = s->context.shard,
                       .own = s->own.get(),
                       .window = s->context.layout.window,
                       .skip_softmax_scale_factor = s->first_rows ? skip.prefill_scale_factor : skip.decode_scale_factor,
                       .rows = rows,
                       .own_host = own_moved ? s->own_host() : -1,
                       .query_host = own_moved ? query_host : -1});
      phase2_rows += rows;
      const bool all_rows = s->first_rows && s->spec.generation.return_query_logits;
      const int64_t count = all_rows ? rows : 1;
      out.logit_first.push_back(static_cast<int64_t>(logit_rows.size()));
      out.logit_count.push_back(count);
      for (int64_t i = rows - count; i < rows; ++i) logit_rows.push_back(first_row + i);
    }
    Result<std::unique_ptr<BatchedQueryAttention>> batched = model.batched_query(comm, std::move(slots));
    if (!batched.ok()) return batched.status();
    out.batched = std::move(*batched);
    parts.push_back({out.batched.get(), phase2_rows});
  }
  if (parts.empty()) return out;
  if (decoding.empty()) {
    // A chunk alone needs no logits.
    Result<std::vector<float>> none = model.forward(tokens, positions, *chunk->attention, 0);
    if (!none.ok()) return none.status();
    return out;
  }

  std::unique_ptr<EngineAttention> split;
  EngineAttention* attention = parts.front().attention;
  if (parts.size() > 1) {
    Result<std::unique_ptr<EngineAttention>> fused = model.row_split(std::move(parts));
    if (!fused.ok()) return fused.status();
    split = std::move(*fused);
    attention = split.get();
  }
  const int64_t vocab = model.config().vocab_size;
  const VocabSlice slice = vocab_slice_of_rank(vocab, comm.rank(), comm.size());
  // Several ranks share the decode rows' dense part: by columns where the model allows it (every
  // rank reads 1/ranks of each weight, which pays for one sequence too), else two or more sequences
  // by rows, each one's layers on one rank (row_sharing.h); one alone then keeps every rank computing
  // it, which spares it the extra all-gather a layer. With rows, ranks start loaded with their Phase 1
  // chunk and their own-token attention, so that rows go where there is room. In a step with a
  // Phase 1 chunk on some rank, two or more sequences go by rows even where columns are possible: a
  // rank running a chunk reads every weight for it anyway, and under Star the rank without an anchor
  // runs out of chunks long before the others and would otherwise wait at every all-gather
  // (docs/algorithms.md).
  RowSharing sharing;
  const int64_t first_shared = chunk ? static_cast<int64_t>(chunk->tokens.size()) : 0;
  const bool chunk_step = std::any_of(chunk_loads.begin(), chunk_loads.end(), [](double load) { return load > 0; });
  const bool rows_for_chunk = chunk_step && decoding.size() > 1 && model.shares_rows();
  const bool by_columns = comm.size() > 1 && model.shares_columns() && !rows_for_chunk;
  const bool share = by_columns || (comm.size() > 1 && decoding.size() > 1 && model.shares_rows());
  if (by_columns) {
    sharing = {.comm = &comm, .first_shared = first_shared, .split = RowSharing::Split::kColumns, .owner = {}};
  } else if (share) {
    std::vector<int64_t> group_rows;
    for (const StepSequence* s : decoding) group_rows.push_back(static_cast<int64_t>(s->pending.size()));
    std::vector<double> loads = own_attention_loads(decoding, comm.size(), attention_keys_per_token(model.config()));
    for (size_t r = 0; r < loads.size() && r < chunk_loads.size(); ++r) loads[r] += chunk_loads[r];
    sharing = {.comm = &comm, .first_shared = first_shared, .owner = balanced_row_owners(group_rows, comm.size(), loads)};
  }
  // The chunk's rows apart from the decode rows, so that a sequence decodes the same bits beside a
  // chunk as alone.
  const int64_t phase1_rows = chunk ? static_cast<int64_t>(chunk->tokens.size()) : 0;
  // Where every row is greedy, each is sampled by its first largest logit alone (one candidate a row
  // between ranks), so only the largest logits need computing.
  const bool greedy = greedy_rows_only(decoding);
  Result<std::vector<float>> logits = model.forward_rows(tokens, positions, *attention, logit_rows, slice,
                                                         share ? &sharing : nullptr, phase1_rows, greedy);
  if (!logits.ok()) return logits.status();
  if (comm.size() == 1) {
    out.logits = std::move(*logits);
    return out;
  }
  if (greedy) {
    Result<std::vector<int32_t>> tokens =
        gather_greedy_tokens(comm, *logits, static_cast<int64_t>(logit_rows.size()), vocab, keep_logits);
    if (!tokens.ok()) return tokens.status();
    out.greedy_tokens = std::move(*tokens);
    return out;
  }
  Result<std::vector<float>> whole =
      gather_vocab_slices(comm, *logits, static_cast<int64_t>(logit_rows.size()), vocab, keep_logits);
  if (!whole.ok()) return whole.status();
  out.logits = std::move(*whole);
  return out;
}

}  // namespace star
