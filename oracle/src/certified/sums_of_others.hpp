#pragma once
// For each term of a list of intervals, the sum of all the other terms, rounded outwards:
// the denominators of the certified weights w_t = e_t / (e_t + rest_t), which must bound
// rest_t from the opposite side to e_t to avoid the dependency blow-up.
#include <mpfr.h>

#include <cstddef>
#include <vector>

#include "moe/oracle/certified/big_float.hpp"

namespace moe::oracle::certified::detail {

// From prefix and suffix sums (before(t) the terms before t, from(t) the terms from t on):
// rest_t = before(t) + from(t + 1), 4n additions where summing each rest takes n^2. Meant
// to be reused: its numbers grow to the longest list seen and follow the precision asked.
class SumsOfOthers {
 public:
  // Sums n terms whose bounds are lower(t) and upper(t) (mpfr_srcptr), at `precision`.
  template <class Lower, class Upper>
  void sum(std::size_t n, mpfr_prec_t precision, Lower lower, Upper upper) {
    prepare(n, precision);
    mpfr_set_zero(beforeLo_[0].get(), 1);
    mpfr_set_zero(beforeHi_[0].get(), 1);
    for (std::size_t t = 0; t < n; ++t) {
      mpfr_add(beforeLo_[t + 1].get(), beforeLo_[t].get(), lower(t), MPFR_RNDD);
      mpfr_add(beforeHi_[t + 1].get(), beforeHi_[t].get(), upper(t), MPFR_RNDU);
    }
    mpfr_set_zero(fromLo_[n].get(), 1);
    mpfr_set_zero(fromHi_[n].get(), 1);
    for (std::size_t t = n; t-- > 0;) {
      mpfr_add(fromLo_[t].get(), fromLo_[t + 1].get(), lower(t), MPFR_RNDD);
      mpfr_add(fromHi_[t].get(), fromHi_[t + 1].get(), upper(t), MPFR_RNDU);
    }
  }

  // A lower bound of rest_t (rounded down) and an upper bound (rounded up), into `out`.
  void lower(std::size_t t, mpfr_ptr out) const;
  void upper(std::size_t t, mpfr_ptr out) const;

 private:
  void prepare(std::size_t n, mpfr_prec_t precision);

  std::vector<BigFloat> beforeLo_, beforeHi_, fromLo_, fromHi_;
  mpfr_prec_t precision_ = 0;
};

}  // namespace moe::oracle::certified::detail
