#include "star/model/llama_model.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>

#include "column_split_products.h"
#include "star/backend/cpu/embedding.h"
#include "star/backend/cpu/matmul.h"
#include "star/backend/cpu/rms_norm.h"
#include "star/backend/cpu/swiglu.h"
#include "star/model/mapped_file.h"
#include "star/model/row_sharing.h"

namespace star {
namespace {

// llama.cpp's default micro-batch. Past about 128 rows a product of the stored weights runs at
// its full rate (star-bench matmul), so the split costs nothing measurable.
constexpr int64_t kFfnChunkRows = 512;

// The layer's matrices, the ones cpu::matmul multiplies (const where the layer is).
template <typename Layer>
auto matrices_of(Layer& layer) {
  return std::array{&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up, &layer.w_down};
}

}  // namespace

Result<LlamaModel> LlamaModel::create(LlamaConfig config, LlamaWeights weights) {
  Result<cpu::RopeTable> rope = cpu::RopeTable::create(config.head_dim, config.rope_theta, config.rope_scaling);
  if (!rope.ok()) return rope.status();
  // The layers' products read the types cpu::prelay_weight packs from their panels alone, so the
  // stored pages of a mapped checkpoint are given back as each matrix is packed.
  for (LlamaLayerWeights& layer : weights.layers) {
    for (WeightTensor* w : matrices_of(layer)) {
      if (cpu::prelay_weight(*w) && w->keep_alive != nullptr) release_mapped_pages(w->data, w->bytes());
    }
  }
  // The output projection's decode rows too; its stored rows stay, for the embedding it may share
  // and for a prompt's many logit rows (matmul_wide_activations). Its row norms serve greedy rows
  // (forward_rows' largest_only).
  cpu::prelay_weight(weights.lm_head, /*row_l1=*/true);
  return LlamaModel(std::move(config), std::move(weights), std::move(*rope));
}

bool LlamaModel::shares_columns_alike() const { return config_.hidden_dim % 16 == 0; }

void LlamaModel::release_cpu_panels() {
  for (LlamaLayerWeights& layer : weights_.layers) {
    for (WeightTensor* w : matrices_of(layer)) w->panels.reset();
  }
  weights_.lm_head.panels.reset();
}

LlamaModel::LlamaModel(LlamaConfig config, LlamaWeights weights, cpu::RopeTable rope)
    : config_(std::move(config)), weights_(std::move(weights)), rope_(std::move(rope)) {}

int64_t LlamaModel::rows_multiplied_alike() const {
  int64_t rows = std::numeric_limits<int64_t>::max();
  for (const LlamaLayerWeights& layer : weights_.layers) {
    for (const WeightTensor* w : matrices_of(layer)) {
      rows = std::min(rows, cpu::rows_multiplied_alike(*w));
    }
  }
  return rows;
}

Status validate_forward_inputs(const LlamaConfig& config, std::span<const int32_t> tokens,
                               std::span<const int32_t> positions, int64_t logit_rows) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (positions.size() != tokens.size()) {
    return invalid_argument("forward: " + std::to_string(tokens.size()) + " tokens but " +
                            std::to_string(positions.size()) + " positions");
  }
  if (logit_rows < 0 || logit_rows > n) {
    return invalid_argument("forward: logit_rows " + std::to_string(logit_rows) + " outside [0, " +
                            std::to_string(n) + "]");
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= config.vocab_size) {
      return invalid_argument("token id " + std::to_string(t) + " outside the vocabulary [0, " +
                              std::to_string(config.vocab_size) + ")");
    }
  }
  return ok_status();
}

Status validate_logit_rows(std::span<const int64_t> logit_rows, int64_t tokens) {
  for (size_t i = 0; i < logit_rows.size(); ++i) {
    const int64_t row = logit_rows[i];
    if (row < 0 || row >= tokens || (i > 0 && row <= logit_rows[i - 1])) {
      return invalid_argument("forward_rows: logit row " + std::to_string(row) + " (entry " + std::to_string(i) +
                              ") is not ascending inside [0, " + std::to_string(tokens) + ")");
    }
  }
  return ok_status();
}

static_assert(LlamaModel::kDecodeGroupRows <= cpu::kRowDotMaxRows, "decode groups take every type's few-rows kernel");

Result<std::vector<float>> LlamaModel::hidden(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                              LayerAttention& attention, const RowSharing* sharing,
                                              int64_t phase1_rows) const {
  const LlamaConfig& c = config_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const RowSharing* columns = sharing != nullptr && sharing->split == RowSharing::Split::kColumns ? sharing : nullptr;
  if (columns != nullptr) {
    if (columns->comm == nullptr || columns->first_shared < 0 || columns->first_shared > n) {
      return invalid_argument("column sharing: " + std::to_string(columns->first_shared) +
                              " rows of this rank do not fit the forward's " + std::to_string(n) +
                              (columns->comm == nullptr ? ", and no communicator" : ""));
    }
    sharing = nullptr;
  }
  // The rows computed here: all of them, or with row sharing this rank's own and the shared ones it owns.
  std::vector<int64_t> here;
  if (sharing != nullptr) {
    Result<std::vector<int64_t>> rows = rows_computed_here(*sharing, n);
    if (!rows.ok()) return rows.status();
    here = std::move(*rows);
  }
  const int64_t m = sharing != nullptr ? static_cast<int64_t>(here.size()) : n;
  std::vector<int32_t> here_tokens, here_positions;
  if (sharing != nullptr) {
    for (int64_t r : here) {
      here_tokens.push_back(tokens[static_cast<size_t>(r)]);
      here_positions.push_back(positions[static_cast<size_t>(r)]);
    }
    tokens = here_tokens;
    positions = here_positions;
  }
  if (Status s = attention.begin(n); !s.ok()) return s;

  const int64_t dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hid = c.hidden_dim;
  // Rows [0, first_decode) are multiplied together (a prompt, a Phase 1 chunk), the decode rows
  // after them in groups of kDecodeGroupRows (forward_rows). With sharing, the chunk's rows are all
  // this rank's and come first in `here`. Up to rows_multiplied_alike() rows are one product: each
  // row's bits are those of its own group, and each weight is read once.
  // With column sharing the shared rows are always apart, as only they are multiplied by slices:
  // in one group where they are multiplied alike (each rank then reads its slices once a step).
  const bool has_decode_rows = sharing != nullptr || phase1_rows >= 0;
  const int64_t first_decode = columns != nullptr ? columns->first_shared
                               : !has_decode_rows || m <= rows_multiplied_alike() ? m
                               : sharing != nullptr ? sharing->first_shared
                                                    : std::min(phase1_rows, m);
  const int64_t decode_group =
      columns != nullptr && m - first_decode <= rows_multiplied_alike() ? std::max<int64_t>(m - first_decode, 1)
                                                                         : kDecodeGroupRows;
  // Calls f(first, rows) for each group of rows multiplied together, in order; with column
  // sharing split(first, rows) instead for the groups of shared rows.
  auto for_groups = [&](auto&& f, auto&& split) -> Status {
    if (first_decode > 0) f(int64_t{0}, first_decode);
    for (int64_t first = first_decode; first < m; first += decode_group) {
      const int64_t rows = std::min(decode_group, m - first);
      if (columns == nullptr) {
        f(first, rows);
      } else if (Status s = split(first, rows); !s.ok()) {
        return s;
      }
    }
    return ok_status();
  };
  // The FFN's two hidden-width buffers are the forward's largest: a long prompt's FFN runs in
  // chunks of equal size up to kFfnChunkRows rows, each large enough to multiply at full speed,
  // sized by the prompt's rows alone so that they are the same beside decode rows.
  const int64_t ffn_chunks = std::max<int64_t>(1, (first_decode + kFfnChunkRows - 1) / kFfnChunkRows);
  const int64_t ffn_rows = std::max((first_decode + ffn_chunks - 1) / ffn_chunks, std::min(decode_group, m));
  std::vector<float> x(m * dim), h(m * dim), q(m * qd), k(m * kvd), v(m * kvd), att(m * qd);
  std::vector<float> gate(ffn_rows * hid), up(ffn_rows * hid);
  // With sharing, the attention sees every row: these hold all n rows' q, k, v and output.
  std::vector<float> all_q, all_k, all_v, all_att;
  if (sharing != nullptr) {
    all_q.resize(n * qd);
    all_k.resize(n * kvd);
    all_v.resize(n * kvd);
    all_att.resize(n * qd);
  }
  const std::array<SharedColumns, 3> qkv = {{{all_q.data(), qd}, {all_k.data(), kvd}, {all_v.data(), kvd}}};
  std::optional<ColumnSplitProducts> split;
  if (columns != nullptr) split.emplace(*columns->comm, c, std::min(decode_group, n - first_decode));

  cpu::embedding_lookup(weights_.embed, tokens.data(), m, x.data());
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& w = weights_.layers[l];
    cpu::rms_norm(x.data(), m, dim, w.attn_norm.f32(), static_cast<float>(c.rms_norm_eps), h.data());
    Status products = for_groups(
        [&](int64_t first, int64_t rows) {
          cpu::matmul_shared_input(h.data() + first * dim, rows,
                                   {{&w.wq, q.data() + first * qd}, {&w.wk, k.data() + first * kvd}, {&w.wv, v.data() + first * kvd}});
        },
        [&](int64_t first, int64_t rows) {
          return split->qkv(w, h.data() + first * dim, rows, q.data() + first * qd, k.data() + first * kvd,
                            v.data() + first * kvd);
        });
    if (!products.ok()) return products;
    cpu::apply_rope(q.data(), m, c.n_heads, c.head_dim, positions.data(), rope_, c.rope_layout);
    cpu::apply_rope(k.data(), m, c.n_kv_heads, c.head_dim, positions.data(), rope_, c.rope_layout);
    if (sharing == nullptr) {
      if (Status s = attention.attend(l, q.data(), k.data(), v.data(), n, att.data()); !s.ok()) return s;
    } else {
      for (int64_t i = 0; i < m; ++i) {
        std::copy_n(q.data() + i * qd, qd, all_q.data() + here[i] * qd);
        std::copy_n(k.data() + i * kvd, kvd, all_k.data() + here[i] * kvd);
        std::copy_n(v.data() + i * kvd, kvd, all_v.data() + here[i] * kvd);
      }
      if (Status s = share_rows(*sharing, qkv); !s.ok()) return s;
      if (Status s = attention.attend(l, all_q.data(), all_k.data(), all_v.data(), n, all_att.data()); !s.ok()) {
        return s;
      }
      for (int64_t i = 0; i < m; ++i) std::copy_n(all_att.data() + here[i] * qd, qd, att.data() + i * qd);
    }
    products = for_groups(
        [&](int64_t first, int64_t rows) {
          cpu::matmul(att.data() + first * qd, rows, w.wo, x.data() + first * dim, /*accumulate=*/true);
        },
        [&](int64_t first, int64_t rows) {
          return split->add_product(w.wo, att.data() + first * qd, rows, x.data() + first * dim);
        });
    if (!products.ok()) return products;

    cpu::rms_norm(x.data(), m, dim, w.ffn_norm.f32(), static_cast<float>(c.rms_norm_eps), h.data());
    products = for_groups(
        [&](int64_t group_first, int64_t group_rows) {
          for (int64_t first = group_first; first < group_first + group_rows; first += ffn_rows) {
            const int64_t rows = std::min(ffn_rows, group_first + group_rows - first);
            cpu::matmul_shared_input(h.data() + first * dim, rows, {{&w.w_gate, gate.data()}, {&w.w_up, up.data()}});
            cpu::swiglu(gate.data(), up.data(), rows * hid, gate.data());
            cpu::matmul(gate.data(), rows, w.w_down, x.data() + first * dim, /*accumulate=*/true);
          }
        },
        [&](int64_t first, int64_t rows) {
          return split->add_ffn(w, h.data() + first * dim, rows, gate.data(), x.data() + first * dim);
        });
    if (!products.ok()) return products;
  }
  if (sharing == nullptr) return x;
  std::vector<float> all_x(n * dim);
  for (int64_t i = 0; i < m; ++i) std::copy_n(x.data() + i * dim, dim, all_x.data() + here[i] * dim);
  const SharedColumns hidden_rows{all_x.data(), dim};
  if (Status s = share_rows(*sharing, {&hidden_rows, 1}); !s.ok()) return s;
  return all_x;
}

std::vector<float> LlamaModel::logits_of(const float* rows, int64_t count, VocabSlice vocab, bool largest_only) const {
  const LlamaConfig& c = config_;
  std::vector<float> logits(count * vocab.count);
  if (count == 0 || vocab.count == 0) return logits;
  std::vector<float> h(count * c.dim);
  cpu::rms_norm(rows, count, c.dim, weights_.final_norm.f32(), static_cast<float>(c.rms_norm_eps), h.data());
  const WeightTensor lm_head = weight_rows(weights_.lm_head, vocab.first, vocab.count);
  if (largest_only) {
    cpu::matmul_wide_activations_maxima(h.data(), count, lm_head, logits.data());
  } else {
    cpu::matmul_wide_activations(h.data(), count, lm_head, logits.data());
  }
  return logits;
}

Result<std::vector<float>> LlamaModel::forward(std::span<const int32_t> tokens,
                                               std::span<const int32_t> positions,
                                               LayerAttention& attention, int64_t logit_rows) const {
  if (Status s = validate_forward_inputs(config_, tokens, positions, logit_rows); !s.ok()) return s;
  Result<std::vector<float>> x = hidden(tokens, positions, attention, nullptr, /*phase1_rows=*/-1);
  if (!x.ok()) return x.status();
  const int64_t n = static_cast<int64_t>(tokens.size());
  return logits_of(x->data() + (n - logit_rows) * config_.dim, logit_rows, {0, config_.vocab_size});
}

Result<std::vector<float>> LlamaModel::forward_rows(std::span<const int32_t> tokens,
                                                    std::span<const int32_t> positions, LayerAttention& attention,
                                                    std::span<const int64_t> logit_rows, VocabSlice vocab,
                                                    const RowSharing* sharing, int64_t phase1_rows,
                                                    bool largest_only) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (Status s = validate_forward_inputs(config_, tokens, positions, 0); !s.ok()) return s;
  if (Status s = validate_logit_rows(logit_rows, n); !s.ok()) return s;
  Result<VocabSlice> columns = checked_vocab_slice(vocab, config_.vocab_size);
  if (!columns.ok()) return columns.status();
  Result<std::vector<float>> x = hidden(tokens, positions, attention, sharing, phase1_rows);
  if (!x.ok()) return x.status();
  const int64_t dim = config_.dim;
  std::vector<float> gathered(logit_rows.size() * dim);
  for (size_t i = 0; i < logit_rows.size(); ++i) {
    std::copy_n(x->data() + logit_rows[i] * dim, dim, gathered.data() + i * dim);
  }
  // Decode rows' logits in groups too, so that a row's do not depend on the rows beside it (a
  // prompt's, in forward, stay one product: exact float32 on widened weights past the few rows).
  const auto count = static_cast<int64_t>(logit_rows.size());
  std::vector<float> logits(static_cast<size_t>(count * columns->count));
  for (int64_t first = 0; first < count; first += kDecodeGroupRows) {
    const int64_t rows = std::min(kDecodeGroupRows, count - first);
    const std::vector<float> group = logits_of(gathered.data() + first * dim, rows, *columns, largest_only);
    std::copy(group.begin(), group.end(), logits.begin() + first * columns->count);
  }
  return logits;
}

}  // namespace star
