// softmaxVecSpec in binary32, op by op, with the host expf: the scalar routers' scores
// (route_scalar.cpp's scalar-probs and route_family_scalar.cpp's moe_route_v2), one
// definition so that both evaluate the spec identically.
#pragma once

#include <cmath>
#include <cstdint>

namespace moe::detail {

// m = left fold of Lean's max (x <= y ? y : x) seeded with x0; e_i = exp(x_i - m); d summed
// in index order from 0; p_i = e_i / d.
inline void softmaxSpec32(const float* x, int32_t experts, float* p) {
  float m = x[0];
  for (int32_t i = 1; i < experts; ++i) m = m <= x[i] ? x[i] : m;
  float d = 0.0f;
  for (int32_t i = 0; i < experts; ++i) {
    p[i] = std::exp(x[i] - m);
    d += p[i];
  }
  for (int32_t i = 0; i < experts; ++i) p[i] = p[i] / d;
}

}  // namespace moe::detail
