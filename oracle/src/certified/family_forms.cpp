#include "family_forms.hpp"

#include <algorithm>
#include <cmath>

#include "moe/oracle/certified/fast_exp.hpp"
#include "moe/oracle/error.hpp"
#include "sums_of_others.hpp"

namespace moe::oracle::certified::detail {

namespace {
float normalisedZero(float v) {
  return v == 0.0f ? 0.0f : v;
}  // -0 and +0 are one real

mpq_class exactRational(float v) {
  mpq_class r(static_cast<double>(v));  // every finite binary32 number is a dyadic rational
  r.canonicalize();
  return r;
}

// The difference of two forms: q and coefficients of a - b, zero coefficients dropped.
Form difference(const Form& a, const Form& b) {
  Form d = a;
  d.q -= b.q;
  for (const auto& [atom, c] : b.coef) {
    mpq_class& slot = d.coef[atom];
    slot -= c;
    if (slot == 0) d.coef.erase(atom);
  }
  return d;
}
}  // namespace

namespace {
// [lo, hi] around exp(l - m) at `precision`: the fixed-point filter where it applies and the
// precision does not exceed its 2^-98 (as softmax_core.cpp), else mpfr_exp rounded down with
// the next number up. `scratch` holds l - m exactly (320 bits).
void expEnclosure(float l, float m, mpfr_prec_t precision, mpfr_ptr scratch, mpfr_ptr lo,
                  mpfr_ptr hi) {
  if (precision >= 64 && precision <= 96 && fastExpEnclosure(l, m, lo, hi)) return;
  mpfr_set_flt(scratch, l, MPFR_RNDN);
  mpfr_sub_d(scratch, scratch, static_cast<double>(m), MPFR_RNDN);  // exact at 320 bits
  const int inexact = mpfr_exp(lo, scratch, MPFR_RNDD);
  mpfr_set(hi, lo, MPFR_RNDN);
  if (inexact != 0) mpfr_nextabove(hi);
}
}  // namespace

Form& Form::operator+=(const Form& other) {
  q += other.q;
  for (const auto& [atom, c] : other.coef) {
    mpq_class& slot = coef[atom];
    slot += c;
    if (slot == 0) coef.erase(atom);
  }
  return *this;
}

RowAtoms::RowAtoms(ScoreFn score, std::span<const float> logits) : score_(score) {
  std::map<float, std::size_t> counts;
  for (float l : logits) {
    if (std::isnan(l)) throw SpecError("internal: NaN logit reached the exact forms");
    if (!std::isfinite(l)) continue;
    if (score == ScoreFn::sigmoid) {
      if (l != 0.0f) ++counts[std::fabs(l)];
    } else {
      ++counts[normalisedZero(l)];
    }
  }
  for (const auto& [v, n] : counts) {
    values_.push_back(v);
    mult_.emplace_back(static_cast<unsigned long>(n));
  }
  iv_.resize(values_.size());
}

std::size_t RowAtoms::at(float v) const {
  const auto it = std::lower_bound(values_.begin(), values_.end(), v);
  if (it == values_.end() || *it != v) throw SpecError("internal: unknown atom in a form");
  return static_cast<std::size_t>(it - values_.begin());
}

Form RowAtoms::scoreForm(float l) const {
  Form f;
  if (score_ == ScoreFn::sigmoid) {
    if (l == -INFINITY) {
      f.q = 0;
    } else if (l == INFINITY) {
      f.q = 1;
    } else if (l == 0.0f) {
      f.q = mpq_class(1, 2);
    } else if (l > 0.0f) {
      f.coef[l] = 1;
    } else {
      f.q = 1;  // sigmoid(l) = 1 - sigmoid(-l)
      f.coef[-l] = -1;
    }
  } else if (std::isfinite(l)) {
    f.coef[normalisedZero(l)] = 1;  // -inf: probability exactly 0
  }
  return f;
}

Form RowAtoms::keyForm(float l, const float* bias) const {
  Form f = scoreForm(l);
  if (bias != nullptr) f.q += exactRational(*bias);
  return f;
}

std::optional<mpq_class> RowAtoms::rational(const Form& f) const {
  if (f.coef.empty()) return f.q;
  if (score_ == ScoreFn::sigmoid || f.coef.size() != values_.size()) return std::nullopt;
  // softmax: coef_l = t * n_l for every atom gives q + t (sum_l n_l p_l = 1).
  std::optional<mpq_class> t;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const auto it = f.coef.find(values_[i]);
    if (it == f.coef.end()) return std::nullopt;
    const mpq_class ti = it->second / mult_[i];
    if (t && *t != ti) return std::nullopt;
    t = ti;
  }
  return f.q + *t;
}

bool RowAtoms::equal(const Form& a, const Form& b) const {
  const Form d = difference(a, b);
  if (d.coef.empty()) return d.q == 0;
  if (score_ == ScoreFn::sigmoid) return false;
  // softmax: d = 0 <=> d.q * n_l + d.coef_l = 0 for every atom l.
  if (d.coef.size() != values_.size()) return false;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const auto it = d.coef.find(values_[i]);
    if (it == d.coef.end() || d.q * mult_[i] + it->second != 0) return false;
  }
  return true;
}

void RowAtoms::encloseAt(mpfr_prec_t precision) {
  if (precision == precision_) return;
  precision_ = precision;
  for (auto& v : iv_) {
    mpfr_set_prec(v.lower.get(), precision);
    mpfr_set_prec(v.upper.get(), precision);
  }
  const std::size_t n = values_.size();
  if (n == 0) return;
  BigFloat arg(320), eLo(precision), eHi(precision), den(precision);
  if (score_ == ScoreFn::sigmoid) {
    for (std::size_t i = 0; i < n; ++i) {
      // sigmoid(c) = 1 / (1 + exp(-c)): decreasing in exp(-c), so each bound of the
      // sigmoid comes from the opposite bound of the exponential.
      expEnclosure(-values_[i], 0.0f, precision, arg.get(), eLo.get(), eHi.get());
      mpfr_add_ui(den.get(), eHi.get(), 1, MPFR_RNDU);
      mpfr_ui_div(iv_[i].lower.get(), 1, den.get(), MPFR_RNDD);
      mpfr_add_ui(den.get(), eLo.get(), 1, MPFR_RNDD);
      mpfr_ui_div(iv_[i].upper.get(), 1, den.get(), MPFR_RNDU);
    }
    return;
  }
  // softmax: p_l = e_l / (n_l e_l + other_l), e_l = exp(l - m) <= 1 with m the largest
  // logit; increasing in e_l and decreasing in other_l, so bounds from opposite bounds.
  const float m = values_.back();
  std::vector<BigFloat> lo(n, BigFloat(precision)), hi(n, BigFloat(precision));
  std::vector<BigFloat> wLo(n, BigFloat(precision)), wHi(n, BigFloat(precision));
  for (std::size_t i = 0; i < n; ++i) {
    expEnclosure(values_[i], m, precision, arg.get(), lo[i].get(), hi[i].get());
    const unsigned long count = mult_[i].get_num().get_ui();
    mpfr_mul_ui(wLo[i].get(), lo[i].get(), count, MPFR_RNDD);
    mpfr_mul_ui(wHi[i].get(), hi[i].get(), count, MPFR_RNDU);
  }
  SumsOfOthers rest;
  rest.sum(
      n, precision, [&](std::size_t i) { return wLo[i].get(); },
      [&](std::size_t i) { return wHi[i].get(); });
  BigFloat term(precision);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned long count = mult_[i].get_num().get_ui();
    // lower: eLo / (n eLo + otherHi), the denominator rounded up
    rest.upper(i, den.get());
    mpfr_mul_ui(term.get(), lo[i].get(), count, MPFR_RNDU);
    mpfr_add(den.get(), den.get(), term.get(), MPFR_RNDU);
    mpfr_div(iv_[i].lower.get(), lo[i].get(), den.get(), MPFR_RNDD);
    // upper: eHi / (n eHi + otherLo), the denominator rounded down
    rest.lower(i, den.get());
    mpfr_mul_ui(term.get(), hi[i].get(), count, MPFR_RNDD);
    mpfr_add(den.get(), den.get(), term.get(), MPFR_RNDD);
    mpfr_div(iv_[i].upper.get(), hi[i].get(), den.get(), MPFR_RNDU);
  }
}

void RowAtoms::interval(const Form& f, Interval& out, mpfr_srcptr qExact) const {
  mpfr_set_prec(out.lower.get(), precision_);
  mpfr_set_prec(out.upper.get(), precision_);
  if (const auto r = rational(f)) {
    mpfr_set_q(out.lower.get(), r->get_mpq_t(), MPFR_RNDD);
    mpfr_set_q(out.upper.get(), r->get_mpq_t(), MPFR_RNDU);
    return;
  }
  mpfr_set_zero(out.lower.get(), 1);
  mpfr_set_zero(out.upper.get(), 1);
  BigFloat& tLo = tLo_;
  BigFloat& tHi = tHi_;
  if (tLo.precision() != precision_) {
    mpfr_set_prec(tLo.get(), precision_);
    mpfr_set_prec(tHi.get(), precision_);
  }
  for (const auto& [atom, c] : f.coef) {
    const Interval& a = iv_[at(atom)];
    if (c == 1 || c == -1) {  // a key's one atom: no multiplication
      if (c == 1) {
        mpfr_add(out.lower.get(), out.lower.get(), a.lower.get(), MPFR_RNDD);
        mpfr_add(out.upper.get(), out.upper.get(), a.upper.get(), MPFR_RNDU);
      } else {
        mpfr_sub(out.lower.get(), out.lower.get(), a.upper.get(), MPFR_RNDD);
        mpfr_sub(out.upper.get(), out.upper.get(), a.lower.get(), MPFR_RNDU);
      }
      continue;
    }
    // c * [lo, hi]: a negative coefficient swaps which bound gives which.
    const bool positive = c > 0;
    mpfr_mul_q(tLo.get(), (positive ? a.lower : a.upper).get(), c.get_mpq_t(), MPFR_RNDD);
    mpfr_mul_q(tHi.get(), (positive ? a.upper : a.lower).get(), c.get_mpq_t(), MPFR_RNDU);
    mpfr_add(out.lower.get(), out.lower.get(), tLo.get(), MPFR_RNDD);
    mpfr_add(out.upper.get(), out.upper.get(), tHi.get(), MPFR_RNDU);
  }
  if (qExact != nullptr) {
    mpfr_add(out.lower.get(), out.lower.get(), qExact, MPFR_RNDD);
    mpfr_add(out.upper.get(), out.upper.get(), qExact, MPFR_RNDU);
  } else if (f.q != 0) {
    mpfr_add_q(out.lower.get(), out.lower.get(), f.q.get_mpq_t(), MPFR_RNDD);
    mpfr_add_q(out.upper.get(), out.upper.get(), f.q.get_mpq_t(), MPFR_RNDU);
  }
}

}  // namespace moe::oracle::certified::detail
