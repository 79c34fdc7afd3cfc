#include "star/backend/cuda/device_weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "star/model/dtype.h"
#include "star/quant/dequantize.h"

namespace star::cuda {
namespace {

// Elements converted per host-to-device copy: bounds the staging memory (96 MiB: float32 and bf16)
// for tensors of any size (a 128K-vocabulary embedding has half a billion elements).
constexpr size_t kStagingElements = size_t{1} << 24;

Status check_elements(const WeightTensor& tensor, int64_t expected, const std::string& name) {
  if (tensor.data == nullptr || tensor.numel() != expected) {
    return invalid_argument("upload_weights: tensor " + name + " has " +
                            std::to_string(tensor.data == nullptr ? 0 : tensor.numel()) +
                            " elements, the config implies " + std::to_string(expected));
  }
  return ok_status();
}

// Any stored type becomes bf16: bf16 rows are copied as they are, the others widened to float32
// (quant::dequantize_rows, exact) and rounded once to nearest even.
Result<DeviceBuffer<__nv_bfloat16>> upload_bf16(const WeightTensor& tensor, int64_t expected,
                                                const std::string& name) {
  if (Status s = check_elements(tensor, expected, name); !s.ok()) return s;
  const auto count = static_cast<size_t>(expected);
  Result<DeviceBuffer<__nv_bfloat16>> buffer = DeviceBuffer<__nv_bfloat16>::allocate(count);
  if (!buffer.ok()) return buffer.status();
  const int64_t cols = tensor.cols(), rows = tensor.rows();
  const int64_t chunk_rows = std::clamp<int64_t>(static_cast<int64_t>(kStagingElements) / std::max<int64_t>(cols, 1), 1, rows);
  std::vector<float> widened(static_cast<size_t>(chunk_rows * cols));
  std::vector<__nv_bfloat16> staging(widened.size());
  for (int64_t first = 0; first < rows; first += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - first);
    const size_t elements = static_cast<size_t>(n * cols);
    const std::byte* src = tensor.data + static_cast<size_t>(first) * tensor.row_bytes();
    if (tensor.dtype == DType::kBF16) {
      std::memcpy(staging.data(), src, elements * sizeof(__nv_bfloat16));
    } else {
      quant::dequantize_rows(tensor.dtype, src, n, cols, widened.data());
      for (size_t i = 0; i < elements; ++i) {
        __nv_bfloat16_raw raw;
        raw.x = f32_to_bf16(widened[i]);
        staging[i] = __nv_bfloat16(raw);
      }
    }
    if (Status s = cuda_status(cudaMemcpy(buffer->data() + first * cols, staging.data(),
                                          elements * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice),
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
  if (tensor.f32() == nullptr) {
    return invalid_argument("upload_weights: tensor " + name + " is " + dtype_name(tensor.dtype) +
                            ", the norms are float32");
  }
  return DeviceBuffer<float>::upload({tensor.f32(), static_cast<size_t>(expected)});
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
