#include "star/backend/cuda/device_weights.h"

#include <algorithm>
#include <string>

#include "star/model/dtype.h"

namespace star::cuda {
namespace {

// Elements converted per host-to-device copy: bounds the staging memory (32 MiB) for tensors of
// any size (a 128K-vocabulary embedding has half a billion elements).
constexpr size_t kStagingElements = size_t{1} << 24;

Status check_elements(const WeightTensor& tensor, int64_t expected, const std::string& name) {
  if (tensor.data == nullptr || tensor.numel() != expected) {
    return invalid_argument("upload_weights: tensor " + name + " has " +
                            std::to_string(tensor.data == nullptr ? 0 : tensor.numel()) +
                            " elements, the config implies " + std::to_string(expected));
  }
  return ok_status();
}

Result<DeviceBuffer<__nv_bfloat16>> upload_bf16(const WeightTensor& tensor, int64_t expected,
                                                const std::string& name) {
  if (Status s = check_elements(tensor, expected, name); !s.ok()) return s;
  const auto count = static_cast<size_t>(expected);
  Result<DeviceBuffer<__nv_bfloat16>> buffer = DeviceBuffer<__nv_bfloat16>::allocate(count);
  if (!buffer.ok()) return buffer.status();
  std::vector<__nv_bfloat16> staging(std::min(count, kStagingElements));
  for (size_t first = 0; first < count; first += staging.size()) {
    const size_t n = std::min(staging.size(), count - first);
    for (size_t i = 0; i < n; ++i) {
      __nv_bfloat16_raw raw;
      raw.x = f32_to_bf16(tensor.data[first + i]);
      staging[i] = __nv_bfloat16(raw);
    }
    if (Status s = cuda_status(cudaMemcpy(buffer->data() + first, staging.data(),
                                          n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice),
                               ("upload_weights: copying " + name).c_str());
        !s.ok()) {
      return s;
    }
  }
  return buffer;
}

Result<DeviceBuffer<float>> upload_f32(const WeightTensor& tensor, int64_t expected,
                                       const std::string& name) {
  if (Status s = check_elements(tensor, expected, name); !s.ok()) return s;
  return DeviceBuffer<float>::upload({tensor.data, static_cast<size_t>(expected)});
}

}  // namespace

size_t DeviceLlamaWeights::bytes() const {
  size_t total = embed.bytes() + final_norm.bytes() + lm_head.bytes();
  for (const DeviceLayerWeights& l : layers) {
    total += l.attn_norm.bytes() + l.wq.bytes() + l.wk.bytes() + l.wv.bytes() + l.wo.bytes() +
             l.ffn_norm.bytes() + l.w_gate.bytes() + l.w_up.bytes() + l.w_down.bytes();
  }
  return total;
}

Result<DeviceLlamaWeights> upload_weights(const LlamaConfig& c, const LlamaWeights& w) {
  if (static_cast<int64_t>(w.layers.size()) != c.n_layers) {
    return invalid_argument("upload_weights: " + std::to_string(w.layers.size()) +
                            " layers of weights for a config with " + std::to_string(c.n_layers));
  }
  DeviceLlamaWeights out;
  const int64_t dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), hid = c.hidden_dim;
  auto embed = upload_bf16(w.embed, c.vocab_size * dim, "embed");
  if (!embed.ok()) return embed.status();
  out.embed = std::move(*embed);
  auto final_norm = upload_f32(w.final_norm, dim, "final_norm");
  if (!final_norm.ok()) return final_norm.status();
  out.final_norm = std::move(*final_norm);
  if (!c.tie_word_embeddings && w.lm_head.data != w.embed.data) {
    auto lm_head = upload_bf16(w.lm_head, c.vocab_size * dim, "lm_head");
    if (!lm_head.ok()) return lm_head.status();
    out.lm_head = std::move(*lm_head);
  }

  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& src = w.layers[static_cast<size_t>(l)];
    const std::string prefix = "layers." + std::to_string(l) + ".";
    DeviceLayerWeights dst;
    struct Matrix {
      const WeightTensor& tensor;
      int64_t elements;
      const char* name;
      DeviceBuffer<__nv_bfloat16>& target;
    };
    const Matrix matrices[] = {
        {src.wq, qd * dim, "wq", dst.wq},           {src.wk, kvd * dim, "wk", dst.wk},
        {src.wv, kvd * dim, "wv", dst.wv},           {src.wo, dim * qd, "wo", dst.wo},
        {src.w_gate, hid * dim, "w_gate", dst.w_gate}, {src.w_up, hid * dim, "w_up", dst.w_up},
        {src.w_down, dim * hid, "w_down", dst.w_down}};
    for (const Matrix& m : matrices) {
      auto uploaded = upload_bf16(m.tensor, m.elements, prefix + m.name);
      if (!uploaded.ok()) return uploaded.status();
      m.target = std::move(*uploaded);
    }
    auto attn_norm = upload_f32(src.attn_norm, dim, prefix + "attn_norm");
    if (!attn_norm.ok()) return attn_norm.status();
    dst.attn_norm = std::move(*attn_norm);
    auto ffn_norm = upload_f32(src.ffn_norm, dim, prefix + "ffn_norm");
    if (!ffn_norm.ok()) return ffn_norm.status();
    dst.ffn_norm = std::move(*ffn_norm);
    out.layers.push_back(std::move(dst));
  }
  return out;
}

}  // namespace star::cuda
