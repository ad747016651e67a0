// A number that rounds every operation one way, for the certified level's budgets: the
// budget formulas are sums and products of non-negative terms, so evaluated with
// Directed<MPFR_RNDD> they give a lower bound of their real value and with
// Directed<MPFR_RNDU> an upper bound, at 192 bits instead of binary64 with an allowance.
#pragma once

#include <mpfr.h>

#include "moe/oracle/certified/big_float.hpp"

namespace moe::fuzz {

template <mpfr_rnd_t kRound>
class Directed {
 public:
  static constexpr mpfr_prec_t kPrecision = 192;

  // From a double: exact (192 bits hold every binary64 value), so implicit.
  Directed(double v = 0.0) : v_(kPrecision) {  // NOLINT(google-explicit-constructor)
    mpfr_set_d(v_.get(), v, kRound);
  }
  // An enclosure's end, rounded this way if it has more bits than kPrecision.
  explicit Directed(const oracle::certified::BigFloat& v) : v_(kPrecision) {
    mpfr_set(v_.get(), v.get(), kRound);
  }

  friend Directed operator+(Directed a, const Directed& b) {
    mpfr_add(a.v_.get(), a.v_.get(), b.v_.get(), kRound);
    return a;
  }
  friend Directed operator*(Directed a, const Directed& b) {
    mpfr_mul(a.v_.get(), a.v_.get(), b.v_.get(), kRound);
    return a;
  }
  friend bool operator>(const Directed& a, const Directed& b) {
    return mpfr_greater_p(a.v_.get(), b.v_.get()) != 0;
  }

  const oracle::certified::BigFloat& value() const { return v_; }
  // The value rounded to binary64 the same way (for reports and binary64 callers).
  double toDouble() const { return mpfr_get_d(v_.get(), kRound); }

 private:
  oracle::certified::BigFloat v_;
};

using RoundedDown = Directed<MPFR_RNDD>;
using RoundedUp = Directed<MPFR_RNDU>;

}  // namespace moe::fuzz
