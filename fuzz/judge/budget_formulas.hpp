// The binary32 budgets of docs/fuzz.md as formulas over any number type T: double for the
// binary64 levels (bit for bit the values they always had), Directed (directed.hpp) for the
// certified level, which bounds each budget's real value at 192 bits. Every term is a sum
// or product of non-negative numbers, so rounding every step down (up) bounds the formula
// from below (above). Constants that are not exact in binary64 never occur: each formula
// starts from a T so that every operation is T's.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "family_bands.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// b_i = (|x_i - m| + 2E + 4c + 4) u p_i + (c + 2) 2^-149 (verdict.hpp, probabilityBudget).
template <class T>
T probabilityBudgetOf(const T& p, double absShift, int32_t experts, double c) {
  T relative = p > T(0.0) ? (T(absShift) + 2.0 * experts + 4 * c + 4) * kU32 * p : T(0.0);
  return relative + (T(c) + 2) * kTiny32;
}

// The binary32 budget of one key (family_bands.hpp, keyBudget).
template <class T>
T keyBudgetOf(const Family& f, const T& s, double tinyAt, double shift, const T& absC, int32_t E,
              double cUlp) {
  T beta;
  if (isSoftmax(f)) {
    beta = probabilityBudgetOf(s, std::isinf(shift) ? 0.0 : shift, E, cUlp);
  } else {
    // binary32: expf (c + 1/2 ulp) then 1 + e and 1 / d: (2c + 3) u relative, with slack
    // (2c + 4) u; below 2^-126 (x < -87.3, where expf(-x) also overflows to inf and the
    // quotient to 0) the absolute 2^-126.
    beta = (T(2 * cUlp) + 4) * kU32 * s + (T(cUlp) + 2) * kTiny32 +
           (tinyAt < 0x1p-125 ? 0x1p-126 : 0.0);
  }
  // fl(s32 + b): one more rounding of the key, and s32's own error.
  if (!f.bias.empty()) beta = beta * (1 + kU32) + kU32 * absC + kTiny32;
  return beta;
}

// One end of a group's budget gamma from one end of its keys' budgets `beta` (members
// h * size to (h + 1) * size) and of its score's magnitude `absScore`: max is exact on the
// rounded keys, so the largest beta of the group; a top-2 sum the two largest plus its own
// rounding u |sum| + 2^-149 (any two keys the kernel picks, in either order).
template <class T>
T groupBudgetOf(const Family& f, int32_t h, int32_t size, std::span<const T> beta,
                const T& absScore) {
  const bool top2 = isTop2Sum(f) && size >= 2;
  // The largest and second largest of the group's budgets (equal values count twice).
  T first(-INFINITY), second(-INFINITY);
  for (int32_t i = h * size; i < (h + 1) * size; ++i) {
    if (beta[i] > first) {
      second = first;
      first = beta[i];
    } else if (beta[i] > second) {
      second = beta[i];
    }
  }
  return top2 ? first + second + (kU32 * absScore + kTiny32) : first;
}

// The analytic floor of a moe_route_v2 gate's budget at |gate| = aG (docs/fuzz.md, "The
// routing family"), for n kept experts of E: softmax renormalised, gateFloor with the kept
// probabilities' weighted shift; sigmoid renormalised, over the kept scores' sum sumS; raw
// softmax, the probability's budget; raw sigmoid, with sigmoid's underflow term when `tiny`
// (the score below 2^-125); each plus the scale's rounding (aScale = |scale|). The verdict
// and the first level both evaluate it, each with its own estimates of the inputs.
inline double familyGateFloor(const Family& f, double aG, double shift, double weighted, int32_t n,
                              int32_t E, double cUlp, double aScale, double sumS, bool tiny) {
  if (renormalises(f)) {
    if (isSoftmax(f)) {
      return gateFloor(aG, shift, weighted, n, E, cUlp) + kU32 * aG +
             aScale * (E + 1.0) * (n + 1.0) * (cUlp + 2) * kTiny32;
    }
    return (4 * cUlp + 2.0 * n + 10) * kU32 * aG +
           aScale * (n + 1.0) * ((cUlp + 2) * kTiny32 + 0x1p-126) / sumS;
  }
  if (isSoftmax(f)) {
    // Raw softmax: the probability's budget, whose denominator sums E terms in any order
    // ((E - 1) u), then the scale's rounding.
    return probabilityBudget(aG, shift, E, cUlp) + kU32 * aG + aScale * (cUlp + 2) * kTiny32;
  }
  return (2 * cUlp + 5) * kU32 * aG + aScale * ((cUlp + 2) * kTiny32 + (tiny ? 0x1p-126 : 0.0));
}

}  // namespace moe::fuzz
