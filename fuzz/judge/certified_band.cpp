// relativeBand: the band ends of a certified quantity, shifted by a reference, in MPFR.
#include "certified_band.hpp"

#include <mpfr.h>

#include <algorithm>

namespace moe::fuzz {
namespace {

// v + add - ref + sign * b, rounded in direction `rnd` at every step, then to binary64 the
// same way. 320 bits more than v's precision: each directed step moves the end by at most
// 2^-320 of itself, far below binary64's resolution.
double bandEnd(const oracle::certified::BigFloat& v, double add, double ref, double b,
               mpfr_rnd_t rnd) {
  oracle::certified::BigFloat t(std::max<mpfr_prec_t>(v.precision(), 64) + 320);
  mpfr_add_d(t.get(), v.get(), add, rnd);
  mpfr_sub_d(t.get(), t.get(), ref, rnd);
  mpfr_add_d(t.get(), t.get(), b, rnd);
  return mpfr_get_d(t.get(), rnd);
}

}  // namespace

RelativeBand relativeBand(const oracle::certified::Interval& value, double add, double bLo,
                          double bHi, double ref) {
  RelativeBand out;
  out.lLo = bandEnd(value.lower, add, ref, -bHi, MPFR_RNDD);
  out.lHi = bandEnd(value.upper, add, ref, -bLo, MPFR_RNDU);
  out.hLo = bandEnd(value.lower, add, ref, bLo, MPFR_RNDD);
  out.hHi = bandEnd(value.upper, add, ref, bHi, MPFR_RNDU);
  return out;
}

}  // namespace moe::fuzz
