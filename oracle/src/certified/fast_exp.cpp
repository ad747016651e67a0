#include "moe/oracle/certified/fast_exp.hpp"

#include <array>
#include <climits>
#include <cmath>
#include <cstdint>

// Fixed point: a value v is the signed 128-bit integer round(v * 2^120) ("ulp" = 2^-120).
//
// exp(d), d = l - m in [-88, 0]:
//   q = round(-d * 256 / ln2) in [0, 32500],  r = d + q * C,  C = ln2 / 256,
//   exp(d) = 2^-(q >> 8) * T[q & 255] * exp(r),  T[j] = 2^(-j / 256),  |r| <= C/2 + tiny.
// Error budget, absolute in ulps of the product T * exp(r) (a value in (0.49, 1.002]):
//   d:       l and m truncated to the grid: |error| < 2 ulps            -> < 2.01 ulps
//   q * C:   C rounded to nearest (0.5 ulp) times q <= 32500 < 2^15     -> < 2^14 ulps
//   Taylor:  11 Horner steps, each a truncated multiply (< 1 ulp) and a
//            coefficient 1/n! rounded to nearest (0.5 ulp), damped by
//            |r| < 2^-9 at every level                                  -> < 2 ulps
//   tail:    sum_{n >= 12} |r|^n / n! < 2^-140                          -> < 1 ulp
//   T[j]:    rounded to nearest (0.5 ulp), times exp(r) < 1.002         -> < 1 ulp
//   T * p:   one truncated multiply                                     -> < 1 ulp
// The total is below 2^14 + 9 ulps; kErrorUlps = 2^16 keeps a factor 4 of margin. The
// bound is absolute on a value >= 0.49, hence relative <= 2^-98 after the scaling by 2^-k.
static_assert(sizeof(unsigned long) == 8,
              "the fixed-point exponential moves 64-bit halves as unsigned long");

namespace moe::oracle::certified::detail {

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

constexpr int kFracBits = 120;
constexpr i128 kErrorUlps = i128(1) << 16;

// Top bits of a 128 x 128 -> 256-bit product, shifted right by kFracBits (truncated
// toward zero), for |a|, |b| < 2^125.
i128 mulFixed(i128 a, i128 b) {
  const bool negative = (a < 0) != (b < 0);
  const u128 x = static_cast<u128>(a < 0 ? -a : a), y = static_cast<u128>(b < 0 ? -b : b);
  const std::uint64_t x1 = static_cast<std::uint64_t>(x >> 64), x0 = static_cast<std::uint64_t>(x);
  const std::uint64_t y1 = static_cast<std::uint64_t>(y >> 64), y0 = static_cast<std::uint64_t>(y);
  const u128 p00 = static_cast<u128>(x0) * y0, p01 = static_cast<u128>(x0) * y1,
             p10 = static_cast<u128>(x1) * y0, p11 = static_cast<u128>(x1) * y1;
  // 256-bit sum as (high:low) halves.
  const u128 mid = (p00 >> 64) + static_cast<std::uint64_t>(p01) + static_cast<std::uint64_t>(p10);
  const u128 low = (mid << 64) | static_cast<std::uint64_t>(p00);
  const u128 high = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
  const u128 shifted = (high << (128 - kFracBits)) | (low >> kFracBits);
  return negative ? -static_cast<i128>(shifted) : static_cast<i128>(shifted);
}

// A finite float with |x| < 64 on the grid, truncated toward zero (error < 1 ulp).
i128 toFixed(float x) {
  int exponent = 0;
  const float mantissa = std::frexp(x, &exponent);  // x = mantissa * 2^exponent
  const auto m24 = static_cast<std::int64_t>(std::ldexp(mantissa, 24));  // exact
  const int shift = exponent - 24 + kFracBits;
  const i128 magnitude = static_cast<i128>(m24 < 0 ? -m24 : m24);
  const i128 v = shift >= 0 ? (magnitude << shift) : (shift > -128 ? magnitude >> -shift : 0);
  return m24 < 0 ? -v : v;
}

i128 fixedFromMpfr(mpfr_srcptr v) {
  mpfr_t scaled;
  mpfr_init2(scaled, 256);
  mpfr_mul_2si(scaled, v, kFracBits, MPFR_RNDN);
  mpfr_round(scaled, scaled);
  // Two 64-bit halves.
  mpfr_t high;
  mpfr_init2(high, 256);
  mpfr_div_2si(high, scaled, 64, MPFR_RNDN);
  mpfr_floor(high, high);
  const std::uint64_t h = mpfr_get_ui(high, MPFR_RNDN);
  mpfr_mul_2si(high, high, 64, MPFR_RNDN);
  mpfr_sub(scaled, scaled, high, MPFR_RNDN);
  const std::uint64_t l = mpfr_get_ui(scaled, MPFR_RNDN);
  mpfr_clears(scaled, high, static_cast<mpfr_ptr>(nullptr));
  return static_cast<i128>((static_cast<u128>(h) << 64) | l);
}

struct Constants {
  i128 c;                                 // ln2 / 256, rounded to nearest
  std::array<i128, 256> table;            // 2^(-j/256), rounded to nearest
  std::array<i128, 12> inverseFactorial;  // 1/n!, rounded to nearest
  Constants() {
    mpfr_t v;
    mpfr_init2(v, 300);
    for (unsigned n = 0; n < inverseFactorial.size(); ++n) {
      mpfr_fac_ui(v, n, MPFR_RNDN);
      mpfr_ui_div(v, 1, v, MPFR_RNDN);
      inverseFactorial[n] = fixedFromMpfr(v);
    }
    mpfr_const_log2(v, MPFR_RNDN);
    mpfr_div_ui(v, v, 256, MPFR_RNDN);
    c = fixedFromMpfr(v);
    for (int j = 0; j < 256; ++j) {
      mpfr_set_si(v, -j, MPFR_RNDN);
      mpfr_div_ui(v, v, 256, MPFR_RNDN);
      mpfr_exp2(v, v, MPFR_RNDN);
      table[j] = fixedFromMpfr(v);
    }
    mpfr_clear(v);
  }
};

const Constants& constants() {
  static const Constants k;
  return k;
}

// Sets out (directed) to v * 2^(-kFracBits - shift) for a non-negative fixed v.
void setScaled(mpfr_ptr out, i128 v, long shift, mpfr_rnd_t rounding) {
  const u128 u = static_cast<u128>(v);
  mpfr_set_ui_2exp(out, static_cast<std::uint64_t>(u >> 64), 64 - kFracBits - shift, MPFR_RNDN);
  // The high half is exact (precision >= 64); one directed addition rounds the whole sum.
  struct Low {
    mpfr_t v;
    Low() { mpfr_init2(v, 64); }
    ~Low() { mpfr_clear(v); }
  };
  thread_local Low low;  // no allocation per call
  mpfr_set_ui_2exp(low.v, static_cast<std::uint64_t>(u), -kFracBits - shift, MPFR_RNDN);
  mpfr_add(out, out, low.v, rounding);
}

}  // namespace

bool fastExpEnclosure(float l, float m, mpfr_ptr lower, mpfr_ptr upper) {
  if (!(std::fabs(l) < 64.0f) || !(std::fabs(m) < 64.0f) || !(l <= m)) return false;
  if (l == m) {  // exp(0) = 1 exactly (covers +0 and -0)
    mpfr_set_ui(lower, 1, MPFR_RNDN);
    mpfr_set_ui(upper, 1, MPFR_RNDN);
    return true;
  }
  const double dApprox = static_cast<double>(l) - static_cast<double>(m);
  if (dApprox < -88.0) return false;
  const Constants& k = constants();
  const i128 d = toFixed(l) - toFixed(m);
  const auto q = static_cast<std::int64_t>(std::nearbyint(-dApprox * 256.0 / std::log(2.0)));
  const i128 r = d + static_cast<i128>(q) * k.c;
  // Horner on the Taylor coefficients 1/n!: p = c0 + r (c1 + r (c2 + ... + r c11)).
  i128 p = k.inverseFactorial[11];
  for (int n = 10; n >= 0; --n) p = k.inverseFactorial[n] + mulFixed(r, p);
  const i128 v = mulFixed(k.table[q & 255], p);
  const long shift = static_cast<long>(q >> 8);
  setScaled(lower, v - kErrorUlps, shift, MPFR_RNDD);
  setScaled(upper, v + kErrorUlps, shift, MPFR_RNDU);
  return true;
}

}  // namespace moe::oracle::certified::detail
