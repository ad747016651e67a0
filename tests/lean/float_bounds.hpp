#pragma once
// Error bounds of the float evaluation of softmaxVecSpec / gatesVecSpec / combineSpec,
// used to check that each certified real-number enclosure is consistent with the value
// Lean computed in binary32 or binary64 (with its own libm, musl's, whose exp is within
// 1 ulp).
//
// Derivation (u = 2^-24 in binary32, 2^-53 in binary64; m the row max):
//   t_i = fl(x_i - m) = (x_i - m)(1 + d), |d| <= u, so exp(t_i) = exp(x_i - m) * (1 + a),
//     |a| <~ |x_i - m| u;
//   e_i = exp(t_i) within 1 ulp: relative 2u, or absolute 2^-149 / 2^-1074 once subnormal;
//   d = left-fold sum of E terms: each term carries the errors above, and since
//     |x_j - m| exp(x_j - m) <= 1/e and the max term is exactly 1, the sum is within
//     (2E + 2) u relatively, plus E subnormal absolute errors;
//   p_i = e_i / d: one more rounding, u, and 2^-150 absolute near underflow.
// Hence |p̂_i - p_i| <= (|x_i - m| + 2E + 5) u p_i + (E + 2) tiny, tiny the smallest
// subnormal. A factor 1.1 covers the second-order terms. A relative term of 1 or more
// says nothing, so it is capped: the check then only bounds the value by 2 p_i + tiny.
//
// Gates of the set S kept on the probabilities: g_e = p̂_e / sum_S p̂_j, whose real value
// is exp(x_e) / sum_S exp(x_j); relatively (rho_e + max_S rho_j + (|S| + 1) u), rho the
// probability bound above, and absolutely 2E(E + 2) tiny + tiny, because sum_S p̂_j holds
// the row's largest probability, >= 1/E.
#include <algorithm>
#include <cmath>
#include <limits>

namespace moe::lean {

template <class F>
struct FloatFormat {
  static constexpr double u = std::numeric_limits<F>::epsilon() / 2;
  static constexpr double tiny = std::numeric_limits<F>::denorm_min();
};

// Relative error bound rho_i of probability i (uncapped).
template <class F>
double probabilityRelativeBound(double distanceToMax, std::size_t experts) {
  return 1.1 * (distanceToMax + 2.0 * static_cast<double>(experts) + 5.0) * FloatFormat<F>::u;
}

// Absolute bound for a value whose real magnitude is at most `magnitude`.
inline double cappedBound(double relative, double magnitude, double absolute) {
  return (relative >= 1.0 ? 1.0 : relative) * magnitude + absolute;
}

template <class F>
double probabilityBound(double distanceToMax, std::size_t experts, double magnitude) {
  return cappedBound(probabilityRelativeBound<F>(distanceToMax, experts), magnitude,
                     static_cast<double>(experts + 2) * FloatFormat<F>::tiny);
}

template <class F>
double gateBound(double rhoE, double rhoMax, std::size_t keptCount, std::size_t experts,
                 double magnitude) {
  const double relative =
      1.1 * (rhoE + rhoMax + (static_cast<double>(keptCount) + 1.0) * FloatFormat<F>::u);
  const double e = static_cast<double>(experts);
  return cappedBound(relative, magnitude, (2.0 * e * (e + 2.0) + 1.0) * FloatFormat<F>::tiny);
}

// combineSpec: a left-fold sum of n products, each rounded: |error| <= gamma_{n+1} sum |g o|
// (Higham's recursive summation bound), plus n + 1 subnormal roundings.
template <class F>
double combineBound(std::size_t terms, double sumOfMagnitudes) {
  const double n = static_cast<double>(terms) + 1.0;
  const double gamma = n * FloatFormat<F>::u / (1.0 - n * FloatFormat<F>::u);
  return 1.1 * gamma * sumOfMagnitudes + n * FloatFormat<F>::tiny;
}

}  // namespace moe::lean
