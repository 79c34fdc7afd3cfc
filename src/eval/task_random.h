// A seeded random source whose sequence is fixed by this code alone (splitmix64), so task samples
// are the same on every platform and standard library.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace star::eval {

class TaskRandom {
 public:
  explicit TaskRandom(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  // Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<size_t>(hi - lo + 1))); }
  std::string_view pick(std::span<const std::string_view> items) { return items[below(items.size())]; }

  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace star::eval
