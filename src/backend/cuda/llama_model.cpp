#include "star/backend/cuda/llama_model.h"

#include <algorithm>
#include <string>
#include <utility>

#include "star/backend/cpu/rope.h"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/embedding.h"
#include "star/backend/cuda/rms_norm.h"
#include "star/backend/cuda/rope.h"
#include "star/backend/cuda/swiglu.h"
#include "star/model/llama_model.h"

namespace star::cuda {
namespace {

template <typename T>
Status ensure(DeviceBuffer<T>& buffer, int64_t count) {
  if (static_cast<int64_t>(buffer.size()) >= count) return ok_status();
  Result<DeviceBuffer<T>> bigger = DeviceBuffer<T>::allocate(static_cast<size_t>(count));
  if (!bigger.ok()) return bigger.status();
  buffer = std::move(*bigger);
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<DeviceLlamaModel>> DeviceLlamaModel::create(const LlamaConfig& config,
                                                                   const LlamaWeights& weights) {
  Result<cpu::RopeTable> rope = cpu::RopeTable::create(config.head_dim, config.rope_theta,
                                                       config.rope_scaling);
  if (!rope.ok()) return rope.status();
  Result<DeviceBuffer<float>> inv_freq = DeviceBuffer<float>::upload(rope->inv_freq());
  if (!inv_freq.ok()) return inv_freq.status();
  Result<DeviceLlamaWeights> device_weights = upload_weights(config, weights);
  if (!device_weights.ok()) return device_weights.status();
  Result<std::unique_ptr<Gemm>> gemm = Gemm::create();
  if (!gemm.ok()) return gemm.status();
  cudaStream_t stream = nullptr;
  if (Status s = cuda_status(cudaStreamCreate(&stream), "DeviceLlamaModel: cudaStreamCreate"); !s.ok()) {
    return s;
  }
  return std::unique_ptr<DeviceLlamaModel>(new DeviceLlamaModel(
      config, std::move(*device_weights), std::move(*inv_freq), std::move(*gemm), stream));
}

DeviceLlamaModel::DeviceLlamaModel(LlamaConfig config, DeviceLlamaWeights weights,
                                   DeviceBuffer<float> inv_freq, std::unique_ptr<Gemm> gemm,
                                   cudaStream_t stream)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      inv_freq_(std::move(inv_freq)),
      gemm_(std::move(gemm)),
      stream_(stream) {}

DeviceLlamaModel::~DeviceLlamaModel() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

Status DeviceLlamaModel::reserve_activations(int64_t n) {
  if (n <= capacity_) return ok_status();
  const LlamaConfig& c = config_;
  const int64_t widest = std::max({c.dim, c.hidden_dim, c.q_dim()});
  const std::pair<DeviceBuffer<float>*, int64_t> rows_of_width[] = {
      {&x_, c.dim},      {&h_, c.dim},        {&q_, c.q_dim()},       {&att_, c.q_dim()},
      {&k_, c.kv_dim()}, {&v_, c.kv_dim()},   {&gate_, c.hidden_dim}, {&up_, c.hidden_dim}};
  for (const auto& [buffer, width] : rows_of_width) {
    if (Status s = ensure(*buffer, n * width); !s.ok()) return s;
  }
  if (Status s = ensure(tokens_, n); !s.ok()) return s;
  if (Status s = ensure(positions_, n); !s.ok()) return s;
  if (Status s = ensure(act_bf16_, n * widest); !s.ok()) return s;
  capacity_ = n;
  return ok_status();
}

Status DeviceLlamaModel::linear(const float* act, int64_t n, int64_t k, const __nv_bfloat16* w,
                                int64_t m, float* y, bool accumulate) {
  if (Status s = to_bf16(act, n * k, act_bf16_.data(), stream_); !s.ok()) return s;
  return gemm_->matmul_nt(act_bf16_.data(), n, k, w, m, y, accumulate, stream_);
}

Status DeviceLlamaModel::run_layers(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                    DeviceLayerAttention& attention) {
  const LlamaConfig& c = config_;
  const auto n = static_cast<int64_t>(tokens.size());
  if (Status s = reserve_activations(n); !s.ok()) return s;
  if (Status s = tokens_.copy_from_host(tokens, stream_); !s.ok()) return s;
  if (Status s = positions_.copy_from_host(positions, stream_); !s.ok()) return s;
  if (Status s = attention.begin(n, stream_); !s.ok()) return s;
  const int64_t dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hid = c.hidden_dim;
  const auto eps = static_cast<float>(c.rms_norm_eps);
  float *x = x_.data(), *h = h_.data(), *q = q_.data(), *k = k_.data(), *v = v_.data();
  float *att = att_.data(), *gate = gate_.data(), *up = up_.data();
  if (Status s = embedding_lookup(weights_.embed.data(), c.vocab_size, dim, tokens_.data(), n, x, stream_);
      !s.ok()) {
    return s;
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const DeviceLayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    if (Status s = rms_norm(x, n, dim, w.attn_norm.data(), eps, h, stream_); !s.ok()) return s;
    if (Status s = linear(h, n, dim, w.wq.data(), qd, q, false); !s.ok()) return s;
    if (Status s = linear(h, n, dim, w.wk.data(), kvd, k, false); !s.ok()) return s;
    if (Status s = linear(h, n, dim, w.wv.data(), kvd, v, false); !s.ok()) return s;
    if (Status s = apply_rope(q, n, c.n_heads, c.head_dim, positions_.data(), inv_freq_.data(),
                              c.rope_layout, stream_);
        !s.ok()) {
      return s;
    }
    if (Status s = apply_rope(k, n, c.n_kv_heads, c.head_dim, positions_.data(), inv_freq_.data(),
                              c.rope_layout, stream_);
        !s.ok()) {
      return s;
    }
    if (Status s = attention.attend(l, q, k, v, n, att, stream_); !s.ok()) return s;
    if (Status s = linear(att, n, qd, w.wo.data(), dim, x, true); !s.ok()) return s;

    if (Status s = rms_norm(x, n, dim, w.ffn_norm.data(), eps, h, stream_); !s.ok()) return s;
    if (Status s = linear(h, n, dim, w.w_gate.data(), hid, gate, false); !s.ok()) return s;
    if (Status s = linear(h, n, dim, w.w_up.data(), hid, up, false); !s.ok()) return s;
    if (Status s = swiglu(gate, up, n * hid, gate, stream_); !s.ok()) return s;
    if (Status s = linear(gate, n, hid, w.w_down.data(), dim, x, true); !s.ok()) return s;
  }
  return ok_status();
}

Status DeviceLlamaModel::logits_of(const float* rows, int64_t count, VocabSlice vocab) {
  if (count == 0 || vocab.count == 0) return ok_status();
  const LlamaConfig& c = config_;
  if (Status s = rms_norm(rows, count, c.dim, weights_.final_norm.data(), static_cast<float>(c.rms_norm_eps),
                          h_.data(), stream_);
      !s.ok()) {
    return s;
  }
  return linear(h_.data(), count, c.dim, weights_.output_projection() + vocab.first * c.dim, vocab.count,
                logits_.data(), false);
}

Status DeviceLlamaModel::forward_on_device(std::span<const int32_t> tokens,
                                           std::span<const int32_t> positions,
                                           DeviceLayerAttention& attention, int64_t logit_rows) {
  const LlamaConfig& c = config_;
  const auto n = static_cast<int64_t>(tokens.size());
  if (Status s = validate_forward_inputs(c, tokens, positions, logit_rows); !s.ok()) return s;
  if (Status s = ensure(logits_, logit_rows * c.vocab_size); !s.ok()) return s;
  if (Status s = run_layers(tokens, positions, attention); !s.ok()) return s;
  return logits_of(x_.data() + (n - logit_rows) * c.dim, logit_rows, {0, c.vocab_size});
}

Status DeviceLlamaModel::forward_rows_on_device(std::span<const int32_t> tokens,
                                                std::span<const int32_t> positions,
                                                DeviceLayerAttention& attention,
                                                std::span<const int64_t> logit_rows, VocabSlice vocab) {
  const LlamaConfig& c = config_;
  const auto n = static_cast<int64_t>(tokens.size());
  const auto count = static_cast<int64_t>(logit_rows.size());
  if (Status s = validate_forward_inputs(c, tokens, positions, 0); !s.ok()) return s;
  if (Status s = validate_logit_rows(logit_rows, n); !s.ok()) return s;
  Result<VocabSlice> columns = checked_vocab_slice(vocab, c.vocab_size);
  if (!columns.ok()) return columns.status();
  if (Status s = ensure(logits_, count * c.vocab_size); !s.ok()) return s;
  if (Status s = ensure(gathered_, count * c.dim); !s.ok()) return s;
  if (Status s = run_layers(tokens, positions, attention); !s.ok()) return s;
  // One copy per run of consecutive rows (a Phase 1 chunk's rows are never asked for, so the
  // runs are few).
  for (int64_t i = 0; i < count;) {
    int64_t end = i + 1;
    while (end < count && logit_rows[end] == logit_rows[end - 1] + 1) ++end;
    const size_t bytes = static_cast<size_t>((end - i) * c.dim) * sizeof(float);
    if (Status s = cuda_status(cudaMemcpyAsync(gathered_.data() + i * c.dim, x_.data() + logit_rows[i] * c.dim, bytes,
                                               cudaMemcpyDeviceToDevice, stream_),
                               "DeviceLlamaModel: gathering logit rows");
        !s.ok()) {
      return s;
    }
    i = end;
  }
  return logits_of(gathered_.data(), count, *columns);
}

Result<std::vector<float>> DeviceLlamaModel::forward_rows(std::span<const int32_t> tokens,
                                                          std::span<const int32_t> positions,
                                                          DeviceLayerAttention& attention,
                                                          std::span<const int64_t> logit_rows, VocabSlice vocab) {
  Result<VocabSlice> columns = checked_vocab_slice(vocab, config_.vocab_size);
  if (!columns.ok()) return columns.status();
  if (Status s = forward_rows_on_device(tokens, positions, attention, logit_rows, *columns); !s.ok()) return s;
  std::vector<float> logits(logit_rows.size() * static_cast<size_t>(columns->count));
  if (Status s = logits_.copy_to_host(logits, stream_); !s.ok()) return s;
  return logits;
}

Result<std::vector<float>> DeviceLlamaModel::forward(std::span<const int32_t> tokens,
                                                     std::span<const int32_t> positions,
                                                     DeviceLayerAttention& attention,
                                                     int64_t logit_rows) {
  if (Status s = forward_on_device(tokens, positions, attention, logit_rows); !s.ok()) return s;
  std::vector<float> logits(static_cast<size_t>(logit_rows * config_.vocab_size));
  if (Status s = logits_.copy_to_host(logits, stream_); !s.ok()) return s;
  return logits;
}

}  // namespace star::cuda

