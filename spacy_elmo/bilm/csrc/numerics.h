// Scalar helpers of the native training kernels (spacy_elmo_lstmp.cpp, its one translation unit):
// bfloat16 <-> float32, a polynomial exp and the activations written with it, typed load/store.
#pragma once

#include <cstdint>
#include <cstring>

namespace {

#define INLINE inline __attribute__((always_inline))

INLINE float bf2f(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// round to nearest even, as torch's float -> bfloat16 (finite values)
INLINE uint16_t f2bf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
// exp(x): 2^n * 2^r, n = round(x log2 e), |r| <= 1/2, 2^r by its Taylor polynomial of degree 6
// (relative error < 2e-7); x is clamped to [-87, 88] (no overflow, no denormals).
INLINE float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float t = x * 1.44269504088896341f;
  float n = __builtin_floorf(t + 0.5f);
  float r = t - n;
  float p = 1.5403530e-4f;
  p = p * r + 1.3333558e-3f;
  p = p * r + 9.6181291e-3f;
  p = p * r + 5.5504109e-2f;
  p = p * r + 2.4022651e-1f;
  p = p * r + 6.9314718e-1f;
  p = p * r + 1.0f;
  int32_t e = (int32_t(n) + 127) << 23;
  float s;
  std::memcpy(&s, &e, 4);
  return p * s;
}
INLINE float sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }
INLINE float tanh_(float x) { return 2.0f / (1.0f + fast_exp(-2.0f * x)) - 1.0f; }

template <typename T> inline float ld(const T* p, int64_t j);
template <> INLINE float ld<float>(const float* p, int64_t j) { return p[j]; }
template <> INLINE float ld<uint16_t>(const uint16_t* p, int64_t j) { return bf2f(p[j]); }
template <typename T> inline void st(T* p, int64_t j, float v);
template <> INLINE void st<float>(float* p, int64_t j, float v) { p[j] = v; }
template <> INLINE void st<uint16_t>(uint16_t* p, int64_t j, float v) { p[j] = f2bf(v); }

}  // namespace
