// The first level's vector kernels (Highway, runtime dispatch): the O(E) scans of a row and
// a binary64 exp with a proven error bound (docs/fuzz.md, "The first level"). Written for
// the judge alone: it shares no code with the routers under test.
#pragma once

#include <cstdint>
#include <span>

namespace moe::fuzz::first {

// |expNeg(t) - exp(-t)| <= kExpRel exp(-t) + kExpAbs for every t (t = +inf gives 0, exactly;
// t = -inf, or t < -700, +inf). The derivation is in docs/fuzz.md: reduction error 2^-53,
// truncation of the degree-13 Taylor polynomial 2^-57, Horner's roundings 2^-47.3; kExpRel
// is that total with a factor of 8 to spare. Below e^-700 the result is 0.
inline constexpr double kExpRel = 0x1p-44;
inline constexpr double kExpAbs = 0x1p-1000;

// What the verdict needs of a row before any arithmetic: real (no NaN, no +inf, some logit
// above -inf) and its largest value.
struct RowScan {
  bool real = false;
  float max = 0;
};
RowScan scanRow(std::span<const float> x);

// How many experts beat expert w (Lean's beats on a NaN-free row): x_j > x_w, or x_j == x_w
// with j < w.
int32_t countBeating(std::span<const float> x, int32_t w);

// out[i] = exp(-t[i]) within kExpRel, kExpAbs. t and out may be the same array.
void expNeg(std::span<const double> t, std::span<double> out);

}  // namespace moe::fuzz::first
