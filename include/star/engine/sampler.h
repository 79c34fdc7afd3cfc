// Choosing the next token from logits: greedy, or temperature / top-k / top-p sampling with a seeded
// generator, so a request with a seed replays exactly.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "star/common/status.h"

namespace star {

struct SamplingParams {
  float temperature = 0.f;  // 0: greedy argmax; > 0: sample from softmax(logits / temperature)
  int32_t top_k = 0;        // keep the top_k most likely tokens first; 0 keeps all
  float top_p = 1.f;        // then the smallest most-likely prefix with mass >= top_p; in (0, 1]
  uint64_t seed = 0;        // seeds the generator (std::mt19937_64)
};

// Ok, or InvalidArgument naming the field and its allowed range.
Status validate_sampling(const SamplingParams& params);

// Greedy decoding over a row split into slices (the ranks' vocabulary slices), so that only one
// candidate a slice travels instead of the slice's logits. A slice's candidate is its first largest
// logit that is not NaN (-inf counts), or id -1 when every logit there is NaN or the slice is empty.
struct GreedyCandidate {
  float logit = 0.f;
  int32_t id = -1;  // in the whole row: the slice's first id plus the offset in the slice
};
GreedyCandidate greedy_candidate(std::span<const float> logits, int32_t first_id);
// The row's greedy token from its slices' candidates, the slices in id order: the largest logit,
// ties to the lower id, 0 when every candidate is -1. Exactly Sampler::sample's greedy pick on the
// whole row.
int32_t greedy_token(std::span<const GreedyCandidate> slices);

// Picks tokens for one sequence. Greedy (temperature 0) takes the largest logit, ties to the lowest
// id. Otherwise: logits / temperature, keep the top_k largest, softmax, keep the smallest prefix
// (by probability descending, ties by id ascending) whose mass reaches top_p, renormalise, and draw.
// Every call with temperature > 0 consumes exactly one number from the generator, so a seed fixes
// the sequence; results are identical across runs. NaN logits are never chosen (unless all are NaN: id 0).
class Sampler {
 public:
  // params must pass validate_sampling.
  explicit Sampler(const SamplingParams& params);

  // logits [vocab], vocab >= 1; returns a token id in [0, vocab).
  int32_t sample(std::span<const float> logits);

 private:
  struct Candidate {
    float logit;   // logit / temperature
    float weight;  // exp(logit - max logit)
    int32_t id;
  };

  // The first candidate whose cumulative weight exceeds target (target < total weight of kept).
  static int32_t draw(std::span<const Candidate> kept, double target);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // reused between calls: vocab-sized
};

}  // namespace star
