#pragma once
// Exact forms of the family's real quantities, for deciding ties exactly and for tight
// enclosures. Every score, key and group score of a row is
//     q + sum_a coef_a * atom_a      (q, coef rational)
// sigmoid: atoms sigmoid(c) for the distinct finite c > 0 among |l_e| (sigmoid(-c) =
//   1 - sigmoid(c), sigmoid(0) = 1/2, sigmoid(-inf) = 0, sigmoid(+inf) = 1). With c = n/d
//   and z = exp(-1/d) transcendental, 1/(1 + z^n) for distinct n are linearly independent
//   with 1 (the largest n alone has a pole at a primitive 2n-th root of unity), so the form
//   is unique: equal values <=> equal forms.
// softmax: atoms p_l = exp(l) / S for the distinct finite logits l (n_l experts each),
//   S = sum_l n_l exp(l); the only relation is sum_l n_l p_l = 1 (exp of distinct rationals
//   are linearly independent), so A = B <=> (qA - qB) * n_l + coefA_l - coefB_l = 0 for
//   every l.
#include <gmpxx.h>

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "moe/oracle/certified/interval.hpp"
#include "moe/oracle/family.hpp"

namespace moe::oracle::certified::detail {

struct Form {
  mpq_class q;
  std::map<float, mpq_class> coef;  // atom value -> coefficient, no zero coefficients
  Form& operator+=(const Form& other);
};

// The atoms of one row and their enclosures at one working precision.
class RowAtoms {
 public:
  RowAtoms(ScoreFn score, std::span<const float> logits);
  ScoreFn score() const { return score_; }
  // The form of s_e (the score of expert e) and of c_e = s_e + bias_e.
  Form scoreForm(float logit) const;
  Form keyForm(float logit, const float* bias) const;
  bool equal(const Form& a, const Form& b) const;
  std::optional<mpq_class> rational(const Form& f) const;
  // Encloses every atom at `precision`; then interval() encloses any form.
  void encloseAt(mpfr_prec_t precision);
  // out's bounds at the working precision. qExact, when given, is f.q exactly as an MPFR
  // number (a key's q is a bias plus 0, 1/2 or 1: dyadic), which saves a rational addition.
  void interval(const Form& f, Interval& out, mpfr_srcptr qExact = nullptr) const;

 private:
  ScoreFn score_;
  std::vector<float> values_;    // distinct atom values, ascending
  std::vector<mpq_class> mult_;  // softmax: n_l; sigmoid: unused
  std::vector<Interval> iv_;
  mpfr_prec_t precision_ = 0;
  mutable BigFloat tLo_{64}, tHi_{64};  // scratch of interval()
  std::size_t at(float v) const;
};

}  // namespace moe::oracle::certified::detail
