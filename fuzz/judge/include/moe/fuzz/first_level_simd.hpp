// The first level's vector kernels (Highway, runtime dispatch): the O(E) scans of a row and
// a binary64 exp with a proven error bound (docs/fuzz.md, "The first level"). Written for
// the judge alone: it shares no code with the routers under test.
#pragma once

#include <cstddef>
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

// How many i have c[i] + radius[i] not below threshold (NaN-free keys).
size_t countNotBelow(std::span<const double> c, std::span<const double> radius, double threshold);

// A group's two largest keys (the largest twice when it occurs twice), largest radius and
// largest budget (radius and beta >= 0).
struct GroupTop {
  double best, second, radius, beta;
};
GroupTop groupTop(std::span<const double> c, std::span<const double> radius,
                  std::span<const double> beta);

// Some x[i] is NaN; every x[i] is finite.
bool anyNaN(std::span<const float> x);
bool allFinite(std::span<const float> x);

// out[i] = exp(-t[i]) within kExpRel, kExpAbs. t and out may be the same array.
void expNeg(std::span<const double> t, std::span<double> out);

// Sigmoid scores of a row: s[i] = 1 / (1 + expNeg(x[i])) with |s[i] - sigmoid(x[i])| <=
// serr[i] = s[i] (kExpRel + 2^-51) + kExpAbs (exp's error passes at most in full, two
// roundings), and t[i] = x[i].
void sigmoidScores(std::span<const float> x, std::span<double> t, std::span<double> s,
                   std::span<double> serr);

// A moe_route_v2 row's keys with the radii and budgets the first level compares them by
// (first_level_family.cpp, docs/fuzz.md): c = s + b, the radius of c and an upper bound
// beta of its binary32 key budget, from the scores s (error serr, softmax shift t) and the
// bias (empty: none). score is the family's (0 softmax, 1 sigmoid); cUlp the exp's ulps.
struct KeyRow {
  std::span<const double> t, s, serr;
  std::span<const float> bias;
  int32_t score;
  double cUlp;
};
void keyBands(const KeyRow& in, std::span<double> c, std::span<double> radius,
              std::span<double> beta);

}  // namespace moe::fuzz::first
