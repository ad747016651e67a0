// relativeBand: the band ends of a certified quantity, shifted by a reference, in MPFR.
#include "certified_band.hpp"

#include <mpfr.h>

#include <algorithm>

namespace moe::fuzz {
namespace {

using oracle::certified::BigFloat;

// v + add - ref + b (b negated when `minus`), rounded in direction `rnd` at every step,
// then to binary64 the same way. 320 bits more than v's and b's precision: each directed
// step moves the end by at most 2^-320 of itself, far below binary64's resolution.
double bandEnd(const BigFloat& v, double add, double ref, const BigFloat& b, bool minus,
               mpfr_rnd_t rnd) {
  BigFloat t(std::max<mpfr_prec_t>({v.precision(), b.precision(), 64}) + 320);
  mpfr_add_d(t.get(), v.get(), add, rnd);
  mpfr_sub_d(t.get(), t.get(), ref, rnd);
  if (minus) {
    mpfr_sub(t.get(), t.get(), b.get(), rnd);
  } else {
    mpfr_add(t.get(), t.get(), b.get(), rnd);
  }
  return mpfr_get_d(t.get(), rnd);
}

}  // namespace

Band relativeBand(const oracle::certified::Interval& value, double add, const BigFloat& bLo,
                  const BigFloat& bHi, double ref) {
  Band out;
  out.lLo = bandEnd(value.lower, add, ref, bHi, true, MPFR_RNDD);
  out.lHi = bandEnd(value.upper, add, ref, bLo, true, MPFR_RNDU);
  out.hLo = bandEnd(value.lower, add, ref, bLo, false, MPFR_RNDD);
  out.hHi = bandEnd(value.upper, add, ref, bHi, false, MPFR_RNDU);
  return out;
}

}  // namespace moe::fuzz
