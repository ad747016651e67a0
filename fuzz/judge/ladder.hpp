// What both token verdicts (judgeToken for moe_route_v1, judgeFamilyToken for moe_route_v2)
// share of their ladder: a quantity is placed against its budget by float comparisons where
// they suffice, then in binary64 with a rigorous error bound, then from the oracle's MPFR
// enclosures; a level that cannot place it says kUndecided and hands it to the next one.
#pragma once

#include <span>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

// Where a level placed a quantity against its budget.
enum class Decision { kWithin, kBeyond, kUndecided };

// The binary64 level's absolute error term for results near underflow (exp's absolute
// error there is below 2^-1074 per term). Any bound above that is sound; this one is the
// smallest normal binary64 rather than a subnormal like 2^-1070, because x86 takes a
// ~100-cycle microcode assist for every operation that makes or reads a subnormal, and
// these terms are added once per expert and gate (~10% of the verdict's time, perf). The
// budgets they are compared with are >= 2^-149, far above it; a case that the wider term
// leaves undecided goes to the MPFR level, as any too-close case does.
inline constexpr double kAbsNormal = 0x1p-1022;

// Widen a binary64 result by one ulp each way: sums and differences are rounded to nearest
// once, so the true value lies within one ulp.
inline double down(double v) {
  return nextDown64(v);
}
inline double up(double v) {
  return nextUp64(v);
}

// A quantity and its budget, enclosed: L = value - budget in [lLo, lHi] and
// H = value + budget in [hLo, hHi]. "a beats b beyond the budget" is L_a > H_b: sure when
// lLo_a > hHi_b, excluded when lHi_a <= hLo_b, undecided between.
struct Band {
  double lLo = 0, lHi = 0, hLo = 0, hHi = 0;
};

// The band of a value in [vLo, vHi] with a budget in [bLo, bHi], each end rounded outward.
inline Band bandOf(double vLo, double vHi, double bLo, double bHi) {
  return {down(vLo - bHi), up(vHi - bLo), down(vLo + bLo), up(vHi + bHi)};
}

// The row's maximum as the spec takes it (Lean's left fold of max seeded with x0, so
// NaN-free rows agree with the oracle bit for bit): the shift of every softmax exponent.
inline float rowMax(std::span<const float> x) {
  float m = x[0];
  for (float v : x) m = m <= v ? v : m;
  return m;
}

}  // namespace moe::fuzz
