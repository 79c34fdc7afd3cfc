// Float vectors (GCC/Clang vector extensions) and the vectorised exponentials the CPU kernels
// share. Eight lanes fill one AVX2 register; with AVX-512VL the compiler also gets 32 of them, which
// the attention kernel uses for larger register blocks. Builds without AVX (the sanitizer build is
// not -march=native) fall back to four SSE lanes.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

namespace star::cpu::simd {

#if defined(__AVX__)
inline constexpr int kLanes = 8;
#else
inline constexpr int kLanes = 4;
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
using IVec = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));

// Registers the compiler can allocate to vectors: register blocking in the kernels depends on it.
#if defined(__AVX512VL__)
inline constexpr int kVectorRegisters = 32;
#else
inline constexpr int kVectorRegisters = 16;
#endif

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(float* p, Vec v) { std::memcpy(p, &v, sizeof(v)); }
// x - (+0) is exact for every x, so the compiler folds it to a plain broadcast; x + 0 is not
// (-0 + 0 = +0) and would cost a real add.
inline Vec splat(float x) { return x - Vec{}; }
inline Vec max(Vec a, Vec b) { return a > b ? a : b; }
inline Vec min(Vec a, Vec b) { return a < b ? a : b; }
inline Vec as_float(IVec v) {
  Vec r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
}
inline IVec as_int(Vec v) {
  IVec r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
}

inline float reduce_add(Vec v) {
  float s = 0.f;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}

inline float reduce_max(Vec v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// {0, 1, ..., kLanes - 1}
inline Vec lane_index() {
  Vec v;
  for (int i = 0; i < kLanes; ++i) v[i] = static_cast<float>(i);
  return v;
}

// Rounds x (|x| < 2^22) to the nearest integer: n as an int and n as a float.
inline void round_to_int(Vec x, IVec& n, Vec& n_float) {
  const float kShifter = 12582912.f;  // 1.5 * 2^23: adding it leaves round(x) in the low mantissa bits
  const Vec t = x + kShifter;
  n = as_int(t) - as_int(splat(kShifter));
  n_float = t - kShifter;
}

// p * 2^n for p in [0.5, 2) and n in [-125, 127] (the result stays a normal float).
inline Vec scale_by_power_of_two(Vec p, IVec n) { return as_float(as_int(p) + (n << 23)); }

// 2^x per lane. Relative error below 2e-7; 0 for x < -125 (tiny results flushed, -inf gives 0)
// and +inf for x > 127. The polynomial is Cephes' exp2f on [-1/2, 1/2]. Forced inline: it sits
// in the softmax loop, where an out-of-line call per vector costs more than the polynomial.
[[gnu::always_inline]] inline Vec exp2(Vec x) {
  const Vec xc = min(max(x, splat(-127.f)), splat(127.f));
  IVec n;
  Vec n_float;
  round_to_int(xc, n, n_float);
  const Vec f = xc - n_float;
  Vec p = splat(1.535336188319500e-4f);
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.f;
  Vec r = scale_by_power_of_two(p, n);
  r = x < -125.f ? splat(0.f) : r;
  r = x > 127.f ? splat(std::numeric_limits<float>::infinity()) : r;
  return r;
}

// e^x per lane. Relative error below 2e-7; 0 below -86.6 (tiny results flushed), +inf above 88.37.
// Cody-Waite reduction x = n ln2 + r with Cephes' expf polynomial on |r| <= ln2 / 2.
[[gnu::always_inline]] inline Vec exp(Vec x) {
  const Vec xc = min(max(x, splat(-88.f)), splat(88.f));
  IVec n;
  Vec n_float;
  round_to_int(xc * 1.44269504088896341f, n, n_float);
  const Vec r = (xc - n_float * 0.693359375f) - n_float * -2.12194440e-4f;
  Vec p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  Vec e = scale_by_power_of_two(p, n);
  e = x < -86.6f ? splat(0.f) : e;
  e = x > 88.37626f ? splat(std::numeric_limits<float>::infinity()) : e;
  return e;
}

}  // namespace star::cpu::simd
