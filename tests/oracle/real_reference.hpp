#pragma once
// An independent reference for the tests: softmax and gates of binary32 logits evaluated
// with MPFR at 512 bits (round to nearest), far beyond the enclosures' 2^-60.
#include <mpfr.h>

#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include "moe/oracle/certified/big_float.hpp"
#include "moe/oracle/certified/interval.hpp"
#include "moe/oracle/routing.hpp"

namespace moe::oracle {

// A 512-bit number as a routing score (never NaN in these tests).
struct Real512 {
  const certified::BigFloat* v;
};

template <>
struct Context<Real512> {
  static bool gtBool(const Real512& x, const Real512& y) {
    return mpfr_greater_p(x.v->get(), y.v->get()) != 0;
  }
  static bool isNaN(const Real512&) { return false; }
};

// A real number known by certified bounds, with the binary32 logit it came from: two equal
// logits give exactly equal reals; otherwise the bounds must separate them.
struct BoundedReal {
  const certified::BigFloat* lower;
  const certified::BigFloat* upper;
  float source;
};

template <>
struct Context<BoundedReal> {
  static bool gtBool(const BoundedReal& x, const BoundedReal& y) {
    if (x.source == y.source) return false;  // the same real number
    if (mpfr_greater_p(x.lower->get(), y.upper->get())) return true;
    if (mpfr_greater_p(y.lower->get(), x.upper->get())) return false;
    throw std::runtime_error("bounds too wide to compare two different reals");
  }
  static bool isNaN(const BoundedReal&) { return false; }
};

namespace testing {

constexpr mpfr_prec_t kReferenceBits = 512;

// softmax_i = exp(l_i - m) / sum_j exp(l_j - m), each step rounded to nearest at 512 bits.
inline std::vector<certified::BigFloat> softmax512(std::span<const float> logits) {
  float m = -INFINITY;
  for (float l : logits) m = std::max(m, l);
  std::vector<certified::BigFloat> p;
  certified::BigFloat sum(kReferenceBits);
  for (float l : logits) {
    p.emplace_back(kReferenceBits);
    mpfr_set_flt(p.back().get(), l, MPFR_RNDN);
    mpfr_sub_d(p.back().get(), p.back().get(), m, MPFR_RNDN);
    mpfr_exp(p.back().get(), p.back().get(), MPFR_RNDN);
    mpfr_add(sum.get(), sum.get(), p.back().get(), MPFR_RNDN);
  }
  for (auto& v : p) mpfr_div(v.get(), v.get(), sum.get(), MPFR_RNDN);
  return p;
}

// Lean's gatesVecSpec evaluated on the 512-bit probabilities: kept on p, p_e / sum_S p_j.
inline std::vector<certified::BigFloat> gates512(std::size_t k, std::span<const float> logits) {
  std::vector<certified::BigFloat> p = softmax512(logits);
  std::vector<Real512> scores;
  scores.reserve(p.size());
  for (const auto& v : p) scores.push_back({&v});
  const std::vector<bool> mask = keptMask(k, std::span<const Real512>(scores));
  certified::BigFloat sum(kReferenceBits);
  for (std::size_t j = 0; j < p.size(); ++j) {
    if (mask[j]) mpfr_add(sum.get(), sum.get(), p[j].get(), MPFR_RNDN);
  }
  std::vector<certified::BigFloat> g;
  for (std::size_t e = 0; e < p.size(); ++e) {
    g.emplace_back(kReferenceBits);
    if (mask[e]) mpfr_div(g.back().get(), p[e].get(), sum.get(), MPFR_RNDN);
  }
  return g;
}

// True when `ref`, a 512-bit round-to-nearest approximation (a few ulps at 512 bits),
// lies in `range` widened by 2^-500 relative: the enclosure may be an exact point that
// the approximation misses by its own rounding error.
inline bool containsApproximation(const certified::Interval& range,
                                  const certified::BigFloat& ref) {
  certified::BigFloat lo(640), hi(640), slack(640);
  mpfr_abs(slack.get(), ref.get(), MPFR_RNDU);
  mpfr_mul_2si(slack.get(), slack.get(), -500, MPFR_RNDU);
  mpfr_sub(lo.get(), range.lower.get(), slack.get(), MPFR_RNDD);
  mpfr_add(hi.get(), range.upper.get(), slack.get(), MPFR_RNDU);
  return mpfr_lessequal_p(lo.get(), ref.get()) && mpfr_lessequal_p(ref.get(), hi.get());
}

}  // namespace testing
}  // namespace moe::oracle
