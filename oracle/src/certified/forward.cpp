#include "moe/oracle/certified/forward.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "moe/oracle/error.hpp"
#include "softmax_core.hpp"
#include "ziv.hpp"

namespace moe::oracle::certified {

namespace {

// A product of two finite binary32 numbers is exact in 48 bits and is a multiple of 2^-298
// below 2^256; a sum of n of them is exact with 555 + log2(n) bits. Router logits and expert
// pre-activations are therefore exact real numbers at this precision.
mpfr_prec_t exactDotBits(std::size_t n) {
  return 560 + static_cast<mpfr_prec_t>(std::bit_width(n + 1));
}

void requireFinite(const char* what, std::span<const float> v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      throw SpecError(std::string("not a real-number input: ") + what + "[" + std::to_string(i) +
                      "] is " + (std::isnan(v[i]) ? "NaN" : "infinite"));
    }
  }
}

// out = sum_i a[i * aStride] * b[i * bStride], exactly (checked: every operation exact).
void exactDot(BigFloat& out, std::size_t n, const float* a, std::size_t aStride, const float* b,
              std::size_t bStride) {
  mpfr_set_prec(out.get(), exactDotBits(n));
  mpfr_set_zero(out.get(), 1);
  mpfr_t x, y, product;
  mpfr_inits2(48, x, y, product, static_cast<mpfr_ptr>(nullptr));
  int inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mpfr_set_flt(x, a[i * aStride], MPFR_RNDN);
    mpfr_set_flt(y, b[i * bStride], MPFR_RNDN);
    inexact |= mpfr_mul(product, x, y, MPFR_RNDN);
    inexact |= mpfr_add(out.get(), out.get(), product, MPFR_RNDN);
  }
  mpfr_clears(x, y, product, static_cast<mpfr_ptr>(nullptr));
  if (inexact != 0) throw SpecError("internal: an exact dot product was rounded");
}

// [lo, hi] * v for an exact v, outward.
void mulByPoint(Interval& out, const Interval& a, mpfr_srcptr v) {
  if (mpfr_sgn(v) >= 0) {
    mpfr_mul(out.lower.get(), a.lower.get(), v, MPFR_RNDD);
    mpfr_mul(out.upper.get(), a.upper.get(), v, MPFR_RNDU);
  } else {
    mpfr_mul(out.lower.get(), a.upper.get(), v, MPFR_RNDD);
    mpfr_mul(out.upper.get(), a.lower.get(), v, MPFR_RNDU);
  }
}

// acc += g * o for a gate g >= 0 and any o, outward (scratch holds the product).
void addGateTimes(Interval& acc, const Interval& g, const Interval& o, Interval& scratch) {
  mpfr_srcptr lowG = mpfr_sgn(o.lower.get()) >= 0 ? g.lower.get() : g.upper.get();
  mpfr_srcptr highG = mpfr_sgn(o.upper.get()) >= 0 ? g.upper.get() : g.lower.get();
  mpfr_mul(scratch.lower.get(), lowG, o.lower.get(), MPFR_RNDD);
  mpfr_mul(scratch.upper.get(), highG, o.upper.get(), MPFR_RNDU);
  mpfr_add(acc.lower.get(), acc.lower.get(), scratch.lower.get(), MPFR_RNDD);
  mpfr_add(acc.upper.get(), acc.upper.get(), scratch.upper.get(), MPFR_RNDU);
}

Interval makeInterval(mpfr_prec_t precision) {
  return {BigFloat(precision), BigFloat(precision)};
}

void setPoint(Interval& out, mpfr_srcptr v) {
  mpfr_set(out.lower.get(), v, MPFR_RNDD);
  mpfr_set(out.upper.get(), v, MPFR_RNDU);
}

// The exact router logits, the kept set over the reals (best first) and the exact
// differences l_e - m for the kept experts (m = the best kept logit).
struct ExactRouting {
  std::vector<BigFloat> logits;
  std::vector<std::size_t> kept;
  std::vector<BigFloat> keptDiffs;
};

ExactRouting routeExactly(std::size_t k, std::span<const float> x, const RouterWeights& router) {
  requireSameSize("router: x vs router dIn", x.size(), router.dIn);
  requireSameSize("router: W vs dIn * experts", router.W.size(), router.dIn * router.experts);
  requireFinite("x", x);
  requireFinite("router.W", router.W);
  ExactRouting r;
  r.logits.resize(router.experts);
  for (std::size_t e = 0; e < router.experts; ++e) {
    exactDot(r.logits[e], router.dIn, x.data(), 1, router.W.data() + e, router.experts);
  }
  // Lean's beats over exact reals: larger logit first, exact ties to the lower index.
  std::vector<std::size_t> order(router.experts);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return mpfr_greater_p(r.logits[a].get(), r.logits[b].get()) != 0;
  });
  order.resize(std::min(k, order.size()));
  r.kept = order;
  for (std::size_t e : r.kept) {
    BigFloat d(exactDotBits(router.dIn) + 8);
    if (mpfr_sub(d.get(), r.logits[e].get(), r.logits[r.kept[0]].get(), MPFR_RNDN) != 0) {
      throw SpecError("internal: a logit difference was rounded");
    }
    r.keptDiffs.push_back(std::move(d));
  }
  return r;
}

// Exact expert pre-activations, computed once for every Ziv level.
struct LinearOutputs {
  std::vector<std::vector<BigFloat>> out;  // [expert][dOut], exact
};
struct SwiGluPre {
  std::vector<std::vector<BigFloat>> a, b;  // W1 x and W3 x, [expert][dHidden], exact
};

void checkShapes(const LinearExperts& ex, std::size_t dIn, std::size_t E) {
  requireSameSize("linear experts: count vs router experts", ex.experts, E);
  requireSameSize("linear experts: dIn vs x", ex.dIn, dIn);
  requireSameSize("linear experts: W vs experts * dOut * dIn", ex.W.size(),
                  ex.experts * ex.dOut * ex.dIn);
  requireFinite("experts.W", ex.W);
}

void checkShapes(const SwiGluExperts& ex, std::size_t dIn, std::size_t E) {
  requireSameSize("SwiGLU experts: count vs router experts", ex.experts, E);
  requireSameSize("SwiGLU experts: dIn vs x", ex.dIn, dIn);
  const std::size_t w13 = ex.experts * ex.dHidden * ex.dIn;
  requireSameSize("SwiGLU experts: W1 vs experts * dHidden * dIn", ex.W1.size(), w13);
  requireSameSize("SwiGLU experts: W3 vs experts * dHidden * dIn", ex.W3.size(), w13);
  requireSameSize("SwiGLU experts: W2 vs experts * dOut * dHidden", ex.W2.size(),
                  ex.experts * ex.dOut * ex.dHidden);
  requireFinite("experts.W1", ex.W1);
  requireFinite("experts.W3", ex.W3);
  requireFinite("experts.W2", ex.W2);
}

std::vector<BigFloat> linearOutput(const LinearExperts& ex, std::size_t e,
                                   std::span<const float> x) {
  std::vector<BigFloat> out(ex.dOut);
  for (std::size_t c = 0; c < ex.dOut; ++c) {
    exactDot(out[c], ex.dIn, ex.W.data() + (e * ex.dOut + c) * ex.dIn, 1, x.data(), 1);
  }
  return out;
}

void swigluPre(const SwiGluExperts& ex, std::size_t e, std::span<const float> x,
               std::vector<BigFloat>& a, std::vector<BigFloat>& b) {
  a.resize(ex.dHidden);
  b.resize(ex.dHidden);
  for (std::size_t h = 0; h < ex.dHidden; ++h) {
    const std::size_t row = (e * ex.dHidden + h) * ex.dIn;
    exactDot(a[h], ex.dIn, ex.W1.data() + row, 1, x.data(), 1);
    exactDot(b[h], ex.dIn, ex.W3.data() + row, 1, x.data(), 1);
  }
}

// silu(a) * b enclosed for exact a, b: silu(a) = a / (1 + exp(-a)).
void encloseSwiGluHidden(Interval& out, mpfr_srcptr a, mpfr_srcptr b, mpfr_prec_t precision) {
  Interval den = makeInterval(precision), s = makeInterval(precision);
  BigFloat negA(mpfr_get_prec(a));
  mpfr_neg(negA.get(), a, MPFR_RNDN);  // exact
  mpfr_exp(den.lower.get(), negA.get(), MPFR_RNDD);
  mpfr_exp(den.upper.get(), negA.get(), MPFR_RNDU);
  mpfr_add_ui(den.lower.get(), den.lower.get(), 1, MPFR_RNDD);
  mpfr_add_ui(den.upper.get(), den.upper.get(), 1, MPFR_RNDU);
  if (mpfr_sgn(a) >= 0) {
    mpfr_div(s.lower.get(), a, den.upper.get(), MPFR_RNDD);
    mpfr_div(s.upper.get(), a, den.lower.get(), MPFR_RNDU);
  } else {
    mpfr_div(s.lower.get(), a, den.lower.get(), MPFR_RNDD);
    mpfr_div(s.upper.get(), a, den.upper.get(), MPFR_RNDU);
  }
  mulByPoint(out, s, b);
}

// One expert's output enclosed at `precision`.
using ExpertAt = std::function<void(std::size_t e, mpfr_prec_t precision, std::vector<Interval>&)>;

// y = sum over `experts` (dense: all, sparse: kept) of gate_e * out_e, at every Ziv level.
std::vector<Certified> forwardOver(std::size_t k, std::span<const float> x,
                                   const RouterWeights& router, std::size_t dOut, bool dense,
                                   const ExpertAt& expertAt, const EnclosureOptions& options,
                                   const char* what) {
  const ExactRouting routing = routeExactly(k, x, router);
  std::vector<mpfr_srcptr> diffs;
  for (const auto& d : routing.keptDiffs) diffs.push_back(d.get());
  std::vector<std::size_t> experts = routing.kept;
  if (dense) {
    experts.resize(router.experts);
    std::iota(experts.begin(), experts.end(), std::size_t{0});
  }
  return detail::zivLoop(
      dOut, options,
      [&](mpfr_prec_t precision, std::vector<Certified>& y) {
        // gates[e]: exact 0 off the kept set (the dense layer still runs those experts).
        std::vector<Interval> gates;
        for (std::size_t e = 0; e < router.experts; ++e) gates.push_back(makeInterval(precision));
        std::vector<Interval> kept;
        for (std::size_t t = 0; t < diffs.size(); ++t) kept.push_back(makeInterval(precision));
        std::vector<Interval*> keptRanges;
        keptRanges.reserve(kept.size());
        for (auto& g : kept) keptRanges.push_back(&g);
        if (!diffs.empty()) {
          detail::encloseNormalisedExps(diffs.size(), diffs.data(), nullptr, precision,
                                        keptRanges.data());
        }
        for (std::size_t t = 0; t < routing.kept.size(); ++t) {
          gates[routing.kept[t]] = std::move(kept[t]);
        }
        for (auto& v : y) {
          mpfr_set_zero(v.range.lower.get(), 1);
          mpfr_set_zero(v.range.upper.get(), 1);
        }
        std::sort(experts.begin(), experts.end());  // index order, as the spec sums
        std::vector<Interval> out;
        Interval scratch = makeInterval(precision);
        for (std::size_t e : experts) {
          expertAt(e, precision, out);
          for (std::size_t c = 0; c < dOut; ++c) {
            addGateTimes(y[c].range, gates[e], out[c], scratch);
          }
        }
      },
      what);
}

std::vector<Certified> forwardLinear(std::size_t k, std::span<const float> x,
                                     const RouterWeights& router, const LinearExperts& ex,
                                     bool dense, const EnclosureOptions& options,
                                     const char* what) {
  checkShapes(ex, x.size(), router.experts);
  requireFinite("x", x);
  LinearOutputs exact;
  exact.out.resize(ex.experts);
  return forwardOver(
      k, x, router, ex.dOut, dense,
      [&](std::size_t e, mpfr_prec_t precision, std::vector<Interval>& out) {
        if (exact.out[e].empty() && ex.dOut > 0) exact.out[e] = linearOutput(ex, e, x);
        out.clear();
        for (std::size_t c = 0; c < ex.dOut; ++c) {
          out.push_back(makeInterval(precision));
          setPoint(out.back(), exact.out[e][c].get());
        }
      },
      options, what);
}

std::vector<Certified> forwardSwiGlu(std::size_t k, std::span<const float> x,
                                     const RouterWeights& router, const SwiGluExperts& ex,
                                     bool dense, const EnclosureOptions& options,
                                     const char* what) {
  checkShapes(ex, x.size(), router.experts);
  requireFinite("x", x);
  SwiGluPre pre;
  pre.a.resize(ex.experts);
  pre.b.resize(ex.experts);
  std::vector<bool> ready(ex.experts, false);
  return forwardOver(
      k, x, router, ex.dOut, dense,
      [&](std::size_t e, mpfr_prec_t precision, std::vector<Interval>& out) {
        if (!ready[e]) swigluPre(ex, e, x, pre.a[e], pre.b[e]), ready[e] = true;
        std::vector<Interval> hidden;
        for (std::size_t h = 0; h < ex.dHidden; ++h) {
          hidden.push_back(makeInterval(precision));
          encloseSwiGluHidden(hidden.back(), pre.a[e][h].get(), pre.b[e][h].get(), precision);
        }
        out.clear();
        Interval term = makeInterval(precision);
        BigFloat w(24);
        for (std::size_t c = 0; c < ex.dOut; ++c) {
          out.push_back(makeInterval(precision));
          for (std::size_t h = 0; h < ex.dHidden; ++h) {
            mpfr_set_flt(w.get(), ex.W2[(e * ex.dOut + c) * ex.dHidden + h], MPFR_RNDN);
            mulByPoint(term, hidden[h], w.get());
            mpfr_add(out.back().lower.get(), out.back().lower.get(), term.lower.get(), MPFR_RNDD);
            mpfr_add(out.back().upper.get(), out.back().upper.get(), term.upper.get(), MPFR_RNDU);
          }
        }
      },
      options, what);
}

}  // namespace

std::vector<Certified> combineEnclosure(std::span<const float> gates,
                                        std::span<const std::vector<float>> outputs,
                                        const EnclosureOptions& options) {
  requireSameSize("combineEnclosure: gates vs expert outputs", gates.size(), outputs.size());
  requireFinite("gates", gates);
  const std::size_t width = outputs.empty() ? 0 : outputs[0].size();
  for (const auto& o : outputs) {
    requireSameSize("combineEnclosure: expert output lengths", width, o.size());
    requireFinite("outputs", o);
  }
  std::vector<BigFloat> exact(width);
  std::vector<float> column(gates.size());
  for (std::size_t c = 0; c < width; ++c) {
    for (std::size_t e = 0; e < gates.size(); ++e) column[e] = outputs[e][c];
    exactDot(exact[c], gates.size(), gates.data(), 1, column.data(), 1);
  }
  return detail::zivLoop(
      width, options,
      [&](mpfr_prec_t, std::vector<Certified>& out) {
        for (std::size_t c = 0; c < width; ++c) setPoint(out[c].range, exact[c].get());
      },
      "combineEnclosure");
}

std::vector<Certified> routerLogitsEnclosure(std::span<const float> x, const RouterWeights& router,
                                             const EnclosureOptions& options) {
  const ExactRouting r = routeExactly(0, x, router);
  return detail::zivLoop(
      router.experts, options,
      [&](mpfr_prec_t, std::vector<Certified>& out) {
        for (std::size_t e = 0; e < router.experts; ++e) setPoint(out[e].range, r.logits[e].get());
      },
      "routerLogitsEnclosure");
}

std::vector<Certified> denseForwardEnclosure(std::size_t k, std::span<const float> x,
                                             const RouterWeights& router,
                                             const LinearExperts& experts,
                                             const EnclosureOptions& options) {
  return forwardLinear(k, x, router, experts, true, options, "denseForwardEnclosure");
}

std::vector<Certified> denseForwardEnclosure(std::size_t k, std::span<const float> x,
                                             const RouterWeights& router,
                                             const SwiGluExperts& experts,
                                             const EnclosureOptions& options) {
  return forwardSwiGlu(k, x, router, experts, true, options, "denseForwardEnclosure");
}

std::vector<Certified> sparseForwardEnclosure(std::size_t k, std::span<const float> x,
                                              const RouterWeights& router,
                                              const LinearExperts& experts,
                                              const EnclosureOptions& options) {
  return forwardLinear(k, x, router, experts, false, options, "sparseForwardEnclosure");
}

std::vector<Certified> sparseForwardEnclosure(std::size_t k, std::span<const float> x,
                                              const RouterWeights& router,
                                              const SwiGluExperts& experts,
                                              const EnclosureOptions& options) {
  return forwardSwiGlu(k, x, router, experts, false, options, "sparseForwardEnclosure");
}

}  // namespace moe::oracle::certified
