#include "softmax_core.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "moe/oracle/certified/fast_exp.hpp"
#include "sums_of_others.hpp"

namespace moe::oracle::certified::detail {

namespace {
// Scratch numbers reused across calls on this thread, so a gate costs no allocation once
// the workspace has grown to the largest kept set seen at this precision.
class Workspace {
 public:
  ~Workspace() {
    for (auto* v : {&eLo, &eHi}) {
      for (auto& x : *v) mpfr_clear(x.value);
    }
    if (haveTmp_) mpfr_clears(tmpLo, tmpHi, diff, static_cast<mpfr_ptr>(nullptr));
  }

  // l - m exactly: 320 bits hold the difference of any two binary32 numbers (their bits
  // span at most 2^127 down to 2^-149, 277 bits, plus a carry); a -inf l gives -inf.
  mpfr_srcptr exactDiff(float l, float m) {
    if (l == -INFINITY) {
      mpfr_set_inf(diff, -1);
    } else {
      mpfr_set_flt(diff, l, MPFR_RNDN);
      mpfr_sub_d(diff, diff, static_cast<double>(m), MPFR_RNDN);
    }
    return diff;
  }
  struct Slot {
    mpfr_t value;
  };
  std::vector<Slot> eLo, eHi;
  SumsOfOthers rest;
  mpfr_t tmpLo, tmpHi, diff;

  void prepare(std::size_t n, mpfr_prec_t precision) {
    if (precision != precision_) {
      for (auto* v : {&eLo, &eHi}) {
        for (auto& x : *v) mpfr_set_prec(x.value, precision);
      }
      if (haveTmp_) {
        mpfr_set_prec(tmpLo, precision);
        mpfr_set_prec(tmpHi, precision);
      }
      precision_ = precision;
    }
    if (!haveTmp_) {
      mpfr_inits2(precision, tmpLo, tmpHi, static_cast<mpfr_ptr>(nullptr));
      mpfr_init2(diff, 320);
      haveTmp_ = true;
    }
    for (auto* v : {&eLo, &eHi}) {
      while (v->size() < n + 1) {
        v->emplace_back();
        mpfr_init2(v->back().value, precision);
      }
    }
  }

 private:
  mpfr_prec_t precision_ = 0;
  bool haveTmp_ = false;
};

thread_local Workspace tWorkspace;
}  // namespace

namespace {
std::atomic<std::uint64_t> gFastExps{0}, gMpfrExps{0};
// The fixed-point exponential is certified to 2^-98: enough while the working precision
// does not ask for more.
constexpr mpfr_prec_t kFastExpMaxPrecision = 96;
}  // namespace

void countExps(std::uint64_t& fast, std::uint64_t& mpfr) {
  fast = gFastExps.load();
  mpfr = gMpfrExps.load();
}

void resetExpCounts() {
  gFastExps.store(0);
  gMpfrExps.store(0);
}

void encloseNormalisedExps(std::size_t n, const mpfr_srcptr* diffs, const FloatDiff* floatArgs,
                           mpfr_prec_t precision, Interval* const* out) {
  Workspace& w = tWorkspace;
  w.prepare(n, precision);
  // e_t: exp rounded down; when inexact the next number up is a valid upper bound, which
  // saves the second exponential.
  std::uint64_t fast = 0;
  for (std::size_t t = 0; t < n; ++t) {
    // The filter's bounds are set exactly to 64 bits before one directed rounding, so it
    // needs a working precision of at least 64 bits.
    if (floatArgs != nullptr && precision >= 64 && precision <= kFastExpMaxPrecision &&
        fastExpEnclosure(floatArgs[t].l, floatArgs[t].m, w.eLo[t].value, w.eHi[t].value)) {
      ++fast;
      continue;
    }
    mpfr_srcptr d = diffs != nullptr ? diffs[t] : w.exactDiff(floatArgs[t].l, floatArgs[t].m);
    const int inexact = mpfr_exp(w.eLo[t].value, d, MPFR_RNDD);
    mpfr_set(w.eHi[t].value, w.eLo[t].value, MPFR_RNDN);
    if (inexact != 0) mpfr_nextabove(w.eHi[t].value);
  }
  gFastExps.fetch_add(fast, std::memory_order_relaxed);
  gMpfrExps.fetch_add(n - fast, std::memory_order_relaxed);
  w.rest.sum(
      n, precision, [&](std::size_t t) { return w.eLo[t].value; },
      [&](std::size_t t) { return w.eHi[t].value; });
  for (std::size_t t = 0; t < n; ++t) {
    w.rest.lower(t, w.tmpLo);
    w.rest.upper(t, w.tmpHi);
    // lower = eLo / (eLo + restHi), upper = eHi / (eHi + restLo)
    mpfr_add(w.tmpHi, w.tmpHi, w.eLo[t].value, MPFR_RNDU);
    mpfr_add(w.tmpLo, w.tmpLo, w.eHi[t].value, MPFR_RNDD);
    mpfr_div(out[t]->lower.get(), w.eLo[t].value, w.tmpHi, MPFR_RNDD);
    mpfr_div(out[t]->upper.get(), w.eHi[t].value, w.tmpLo, MPFR_RNDU);
  }
}

}  // namespace moe::oracle::certified::detail
