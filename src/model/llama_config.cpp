#include "star/model/llama_config.h"

namespace star {

int64_t LlamaConfig::parameter_count() const {
  const int64_t per_layer = 2 * dim                      // attention and FFN RMSNorm weights
                            + dim * q_dim() + 2 * dim * kv_dim() + q_dim() * dim  // wq, wk, wv, wo
                            + 3 * dim * hidden_dim;      // w_gate, w_up, w_down
  const int64_t embeddings = vocab_size * dim * (tie_word_embeddings ? 1 : 2);
  return embeddings + n_layers * per_layer + dim;
}

}  // namespace star
