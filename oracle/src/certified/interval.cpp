#include "moe/oracle/certified/interval.hpp"

#include <cmath>
#include <limits>

namespace moe::oracle::certified {

Interval Interval::point(double v, mpfr_prec_t precision) {
  Interval r{BigFloat(precision), BigFloat(precision)};
  mpfr_set_d(r.lower.get(), v, MPFR_RNDD);
  mpfr_set_d(r.upper.get(), v, MPFR_RNDU);
  return r;
}

double Interval::lowerDouble() const {
  return mpfr_get_d(lower.get(), MPFR_RNDD);
}
double Interval::upperDouble() const {
  return mpfr_get_d(upper.get(), MPFR_RNDU);
}

bool Interval::contains(double v) const {
  if (std::isnan(v)) return false;
  return mpfr_cmp_d(lower.get(), v) <= 0 && mpfr_cmp_d(upper.get(), v) >= 0;
}

bool Interval::contains(const BigFloat& v) const {
  return mpfr_lessequal_p(lower.get(), v.get()) && mpfr_lessequal_p(v.get(), upper.get());
}

bool Interval::isPoint() const {
  return mpfr_equal_p(lower.get(), upper.get()) != 0;
}

double Interval::relativeWidth() const {
  if (isPoint()) return 0;
  if (mpfr_sgn(lower.get()) <= 0 && mpfr_sgn(upper.get()) >= 0) {
    return std::numeric_limits<double>::infinity();
  }
  BigFloat width(64), magnitude(64);
  mpfr_sub(width.get(), upper.get(), lower.get(), MPFR_RNDU);
  if (mpfr_sgn(lower.get()) > 0) {
    mpfr_set(magnitude.get(), lower.get(), MPFR_RNDD);
  } else {
    mpfr_neg(magnitude.get(), upper.get(), MPFR_RNDD);
  }
  mpfr_div(width.get(), width.get(), magnitude.get(), MPFR_RNDU);
  return mpfr_get_d(width.get(), MPFR_RNDU);
}

std::string Interval::toString() const {
  return "[" + lower.toString() + ", " + upper.toString() + "]";
}

}  // namespace moe::oracle::certified
