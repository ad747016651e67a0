#pragma once
// Lean's `Context a`: the scalar operations the spec is generic over. One specialisation
// per scalar the oracle evaluates the spec in: exact rationals, IEEE binary32, binary64.
#include <gmpxx.h>

#include <cmath>
#include <concepts>

namespace moe::oracle {

template <class A>
struct Context;

// Operations every context shares; `max` is Lean's maxOfLe (`x <= y ? y : x`), so
// max(+0, -0) = -0 and max(-0, +0) = +0 exactly as Lean evaluates it in binary32.
template <class A>
struct ContextBase {
  static A zero() { return A(0); }
  static A one() { return A(1); }
  static A add(const A& x, const A& y) { return x + y; }
  static A sub(const A& x, const A& y) { return x - y; }
  static A mul(const A& x, const A& y) { return x * y; }
  static A div(const A& x, const A& y) { return x / y; }
  static A max(const A& x, const A& y) { return x <= y ? y : x; }
  // Lean: Context.gtBool — serves gtBool_eq_true, gtBool_eq_false
  static bool gtBool(const A& x, const A& y) { return x > y; }
  static bool isNaN(const A&) { return false; }
};

template <>
struct Context<float> : ContextBase<float> {
  static float exp(float x) { return std::exp(x); }  // the host's expf
  static bool isNaN(float x) { return std::isnan(x); }
};

template <>
struct Context<double> : ContextBase<double> {
  static double exp(double x) { return std::exp(x); }
  static bool isNaN(double x) { return std::isnan(x); }
};

// Exact rationals have no exp: there is deliberately no `exp` member, so softmax over
// mpq_class does not compile (checked by HasExp in the tests).
template <>
struct Context<mpq_class> : ContextBase<mpq_class> {
  static mpq_class div(const mpq_class& x, const mpq_class& y) {
    return y == 0 ? mpq_class(0) : mpq_class(x / y);  // Lean: x / 0 = 0 in ℚ
  }
};

// True when Context<A> has an exp, i.e. softmax can be evaluated in A.
template <class A>
concept HasExp = requires(A x) {
  { Context<A>::exp(x) } -> std::convertible_to<A>;
};

}  // namespace moe::oracle
