#pragma once
// A fast certified exponential for the first Ziv level: exp(l - m) for binary32 l <= m,
// evaluated in 128-bit fixed point with a proven error bound, about ten times faster than
// mpfr_exp at 80 bits. The enclosure it returns is at most 2^-98 wide (relative); callers
// fall back to MPFR when it declines (arguments out of its range) or when they need more.
#include <mpfr.h>

namespace moe::oracle::certified::detail {

// Sets [lower, upper] (directed rounding at their own precisions, >= 64 bits) to an
// enclosure of exp(l - m) and returns true, when |l| < 64, |m| < 64 and -88 <= l - m <= 0;
// returns false (touching nothing) otherwise. l == m gives exactly 1.
bool fastExpEnclosure(float l, float m, mpfr_ptr lower, mpfr_ptr upper);

}  // namespace moe::oracle::certified::detail
