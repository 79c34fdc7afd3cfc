#include "star/attention/rocket/token_budget.h"

#include <algorithm>
#include <cmath>

namespace star::rocket {

RocketConfig config_for_request(const RocketConfig& config, int64_t prompt_tokens, int64_t max_new_tokens,
                                int64_t head_dim) {
  if (config.token_budget <= 0) return config;
  RocketConfig out = config;
  const int64_t total = prompt_tokens + max_new_tokens;
  const double budget = static_cast<double>(config.token_budget);
  const double overall = std::max(1.0, static_cast<double>(total) / budget);
  const double stage1_share = std::min(0.2 + std::log2(overall) * 0.06, 0.8);
  const auto capacity = std::max(static_cast<int64_t>(static_cast<double>(total) / std::pow(overall, stage1_share)),
                                 std::min(2 * max_new_tokens, total));
  out.prompt_budget = std::max(capacity - max_new_tokens, config.window_size + 1);

  const double stage2 = std::max(1.0, static_cast<double>(capacity) / budget);
  auto chunk = static_cast<int64_t>(std::ceil(std::sqrt(stage2)));
  if (static_cast<double>(chunk) > stage2) chunk = 1;
  int64_t page = 1;
  while (page * 2 <= chunk) page *= 2;
  out.page_size = page;
  out.topk = std::max<int64_t>(1, config.token_budget / 2 / page);
  out.topr = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(head_dim * page) / stage2), 1, head_dim);
  return out;
}

}  // namespace star::rocket
