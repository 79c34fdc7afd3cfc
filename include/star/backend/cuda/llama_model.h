// DeviceLlamaModel: the Llama forward pass of star::LlamaModel on one GPU, op for op:
//
//   x = embed[tokens]                                     [n, dim]       embedding_lookup (bf16 table)
//   per layer:  h = rms_norm(x) ; q,k,v = h·Wq/Wk/Wv        [n, Hq·d], [n, Hkv·d]   (cuBLASLt, bf16 in)
//               rope(q, k, positions) ; a = attention(q, k, v)   (DeviceLayerAttention)
//               x += a·Wo
//               h = rms_norm(x) ; x += (silu(h·Wg) ⊙ h·Wu)·Wd
//   logits = rms_norm(x)·lm_headᵀ for the last rows asked for   [rows, vocab]
//
// The residual stream, norms, RoPE, attention and logits are float32; each GEMM rounds its input
// activations to bf16 and accumulates in float32. Work runs on the model's own stream.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "star/backend/cuda/device_buffer.h"
#include "star/backend/cuda/device_weights.h"
#include "star/backend/cuda/gemm.h"
#include "star/backend/cuda/layer_attention.h"
#include "star/common/status.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"
#include "star/model/vocab_slice.h"

namespace star::cuda {

class DeviceLlamaModel {
 public:
  // Uploads the weights to the current device; errors name the bad field or tensor.
  static Result<std::unique_ptr<DeviceLlamaModel>> create(const LlamaConfig& config,
                                                           const LlamaWeights& weights);
  ~DeviceLlamaModel();
  DeviceLlamaModel(const DeviceLlamaModel&) = delete;
  DeviceLlamaModel& operator=(const DeviceLlamaModel&) = delete;

  const LlamaConfig& config() const { return config_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const { return weights_.bytes(); }

  // Runs n = tokens.size() new tokens at explicit RoPE positions through every layer; the logits
  // of the last `logit_rows` tokens are left in device_logits(), [logit_rows, vocab]. Token ids are
  // validated on the host first, like the CPU model.
  Status forward_on_device(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                           DeviceLayerAttention& attention, int64_t logit_rows = 1);
  const float* device_logits() const { return logits_.data(); }

  // forward_on_device, then the logits copied to the host: the CPU model's forward().
  Result<std::vector<float>> forward(std::span<const int32_t> tokens,
                                     std::span<const int32_t> positions,
                                     DeviceLayerAttention& attention, int64_t logit_rows = 1);

  // The same pass with the logits of rows `logit_rows` (ascending, each in [0, tokens)) only, columns
  // `vocab`: [logit_rows.size(), vocab.count], as LlamaModel::forward_rows: on the device, then on
  // the host.
  Status forward_rows_on_device(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                DeviceLayerAttention& attention, std::span<const int64_t> logit_rows,
                                VocabSlice vocab = {});
  Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                          DeviceLayerAttention& attention, std::span<const int64_t> logit_rows,
                                          VocabSlice vocab = {});

 private:
  DeviceLlamaModel(LlamaConfig config, DeviceLlamaWeights weights, DeviceBuffer<float> inv_freq,
                   std::unique_ptr<Gemm> gemm, cudaStream_t stream);

  // Every layer over the tokens: the residual stream in x_ [n, dim].
  Status run_layers(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                    DeviceLayerAttention& attention);
  // rms_norm(rows [count, dim])·lm_headᵀ into logits_.
  Status logits_of(const float* rows, int64_t count, VocabSlice vocab);
  // Grows the activation buffers to n tokens.
  Status reserve_activations(int64_t n);
  // y[n, m] (+)= act[n, k] · w^T with act rounded to bf16 first.
  Status linear(const float* act, int64_t n, int64_t k, const __nv_bfloat16* w, int64_t m, float* y,
                bool accumulate);

  LlamaConfig config_;
  DeviceLlamaWeights weights_;
  DeviceBuffer<float> inv_freq_;  // cpu::RopeTable's frequencies, [head_dim / 2]
  std::unique_ptr<Gemm> gemm_;
  cudaStream_t stream_ = nullptr;

  int64_t capacity_ = 0;  // tokens the activation buffers hold
  DeviceBuffer<int32_t> tokens_, positions_;
  DeviceBuffer<float> x_, h_, q_, k_, v_, att_, gate_, up_, logits_;
  DeviceBuffer<float> gathered_;  // forward_rows' rows of x_, [rows, dim]
  DeviceBuffer<__nv_bfloat16> act_bf16_;  // the GEMM input, [n, max(dim, hidden, Hq·d)]
};

}  // namespace star::cuda
