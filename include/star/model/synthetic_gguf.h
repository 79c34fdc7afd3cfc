// star-mkmodel's GGUF output: a synthetic model (star/model/synthetic_model.h, same seed, same
// values) written as llama.cpp's converter and llama-quantize would write it: llama.* keys,
// tokenizer.ggml.* from the synthetic byte-level BPE ("gpt2", pre "llama-bpe"), tensors token_embd,
// blk.N.*, output_norm, output (absent when tied), rope_freqs for llama3 rope scaling, and Q/K rows
// permuted into the adjacent-pair RoPE layout.
//
// Which type each tensor gets (llama.cpp's llama_tensor_get_type, as far as Llama goes):
//   - 1-D tensors (norms, rope_freqs) stay F32;
//   - in a quantized file the output matrix (token_embd when tied) is Q6_K, or Q8_0 when its rows
//     are not a multiple of 256; q8_0 files keep it Q8_0;
//   - q4_k_m / q5_k_m: attn_v and ffn_down of layer i are Q6_K when i < n/8, i >= 7n/8 or
//     (i - n/8) % 3 == 2; the other matrices Q4_K / Q5_K;
//   - a K-quant tensor whose rows are not a multiple of 256 falls back to Q4_K -> Q5_0,
//     Q5_K -> Q5_1, Q6_K -> Q8_0, and any block type whose rows are not whole blocks to F16.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "star/common/status.h"
#include "star/model/dtype.h"
#include "star/model/synthetic_model.h"

namespace star {

struct GgufFileType {
  const char* name;      // star-mkmodel's --dtype: "f32", ..., "q4_k_m"
  DType base;            // the type of most matrices
  bool k_mix;            // q4_k_m / q5_k_m: some attn_v / ffn_down in Q6_K
  uint32_t llama_ftype;  // general.file_type (llama.cpp's LLAMA_FTYPE_*)
};

// f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m q5_k_m.
std::span<const GgufFileType> gguf_file_types();
Result<GgufFileType> gguf_file_type(std::string_view name);  // kInvalidArgument for another name

// The stored type of tensor `gguf_name` of row-major `shape` in a file of `file_type`.
DType gguf_tensor_type(const GgufFileType& file_type, std::string_view gguf_name, std::span<const int64_t> shape,
                       int64_t n_layers, bool has_output);

// Writes the model of `spec` (spec.dtype is not used: the file type decides) to `out_file`.
Status write_synthetic_gguf(const SyntheticModelSpec& spec, const GgufFileType& file_type,
                            const std::filesystem::path& out_file);

}  // namespace star
