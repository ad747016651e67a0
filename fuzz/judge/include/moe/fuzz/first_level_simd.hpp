// The first level's vector kernels (Highway, runtime dispatch): the O(E) scans of a row and
// a binary64 exp with a proven error bound (docs/fuzz.md, "The first level"). Written for
// the judge alone: it shares no code with the routers under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "moe/fuzz/family.hpp"

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

// A group's two largest keys (the largest twice when it occurs twice) and largest radius
// (radius >= 0).
struct GroupTop {
  double best, second, radius;
};
GroupTop groupTop(std::span<const double> c, std::span<const double> radius);

// Every x[i] is finite.
bool allFinite(std::span<const float> x);

// out[i] = exp(-t[i]) within kExpRel, kExpAbs. t and out may be the same array.
void expNeg(std::span<const double> t, std::span<double> out);

// Sigmoid scores of a row: s[i] = 1 / (1 + expNeg(x[i])) with |s[i] - sigmoid(x[i])| <=
// serr[i] = s[i] (kExpRel + 2^-51) + kExpAbs (exp's error passes at most in full, two
// roundings), and t[i] = x[i]. True when some x[i] is NaN (the row is not real).
bool sigmoidScores(std::span<const float> x, std::span<double> t, std::span<double> s,
                   std::span<double> serr);

// A moe_route_v2 row's keys with the radii the first level compares them by
// (first_level_family.cpp, docs/fuzz.md): c = s + b and the radius of c, from the scores s
// (error serr, softmax shift t) and the bias (empty: none). score is the family's.
struct KeyRow {
  std::span<const double> t, s, serr;
  std::span<const float> bias;
  ScoreFunction score;
};
void keyBands(const KeyRow& in, std::span<double> c, std::span<double> radius);

// The gates of a block of moe_route_v1 tokens, one vector lane per token (the batched first
// level, first_level_batch.cpp): token `lane`'s kept set has n slots; for slot s,
// t[s * kBatchTokens + lane] = mS - x_e (mS the kept set's largest logit), shift[...] =
// m - x_e (m the row's largest) and g[...] its gate. ok[lane] is set to 0 where some gate
// is not within its budget by decideToken's bound (first_level_token.cpp's gatesWithin, the
// same operations in the same order), else left as it is. p is scratch of n kBatchTokens.
inline constexpr int32_t kBatchTokens = 64;
struct GateBatch {
  int32_t n, experts;
  double *t, *shift;  // written by prepareBatch, read by gatesWithinBatch
  float* g;
  double expUlp, gateUlp;
  bool analyticFloor;
  double* p;
  uint8_t* ok;
};
void gatesWithinBatch(const GateBatch& b);

// The checks before the gates for `count` <= kBatchTokens consecutive tokens of a case (x:
// their logits, E a row; ids and gates: n slots a token, 1 <= n <= E <= kVectorExperts),
// one vector lane per token: ok[lane] = 1 where the row is finite, every slot holds a
// distinct id in range with a finite gate >= 0, n - 1 experts beat the kept set's worst
// member, and (rank) each slot beats the next; those lanes of b's t, shift and g are
// filled, the others zeroed (first_level_batch.cpp says why these decide as decideToken).
inline constexpr int32_t kVectorExperts = 32;  // an id a bit of an int32 lane
struct TokenBlock {
  const float* x;
  const int32_t* ids;
  const float* gates;
  int32_t count;
  bool rank;
};
void prepareBatch(const TokenBlock& in, const GateBatch& b);

}  // namespace moe::fuzz::first
