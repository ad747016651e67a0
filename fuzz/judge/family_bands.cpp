// The family verdict's selection numbers: the binary64 row, the group scores, and the bands
// from binary64 and from the oracle's MPFR enclosures (family_bands.hpp).
#include "family_bands.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "budget_formulas.hpp"
#include "certified_band.hpp"
#include "directed.hpp"
#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/oracle/certified/family.hpp"

namespace moe::fuzz {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal inputs, equal real keys: the logit (-0 as +0) and the bias. Two experts whose forms
// agree tie exactly over the reals; the converse is not needed (unequal forms are judged
// as near-ties, to the router's benefit).
uint64_t formOf(float x, float b) {
  auto bits = [](float v) { return bitsOf(v == 0.0f ? 0.0f : v); };
  return (uint64_t{bits(x)} << 32) | bits(b);
}

// Softmax in binary64: s = exp(-(m - x)) / D, the shift rounded once, exp < 1 ulp, the sum
// of E terms and the division.
void softmaxScores(std::span<const float> x, FamilyRow& r) {
  const size_t E = x.size();
  const float m = rowMax(x);
  double D = 0;
  for (size_t i = 0; i < E; ++i) {
    r.shift[i] = x[i] == -INFINITY ? kInf : static_cast<double>(m) - x[i];
    r.s[i] = std::isinf(r.shift[i]) ? 0.0 : std::exp(-r.shift[i]);
    D += r.s[i];
  }
  for (size_t i = 0; i < E; ++i) {
    r.s[i] /= D;
    const double sh = std::isinf(r.shift[i]) ? 0.0 : r.shift[i];
    r.serr[i] = r.s[i] * (sh + 2.0 * E + 8) * 0x1p-52 + kAbsNormal;
  }
}

// Sigmoid in binary64: 1 / (1 + exp(-x)): exp's argument is exact, exp < 1 ulp, two
// roundings.
void sigmoidScores(std::span<const float> x, FamilyRow& r) {
  for (size_t i = 0; i < x.size(); ++i) {
    r.s[i] = sigmoid64(x[i]);
    r.serr[i] = r.s[i] * 0x1p-50 + kAbsNormal;
  }
}

// The binary64 group budget gamma in [gLo, gHi] (budget_formulas.hpp's groupBudgetOf) for
// a group score in [scoreLo, scoreHi], with a 2^-50 relative allowance for its own rounding.
void groupBudget(const Family& f, int32_t h, int32_t size, std::span<const double> betaLo,
                 std::span<const double> betaHi, double scoreLo, double scoreHi, double& gLo,
                 double& gHi) {
  const double aLo =
      scoreLo <= 0 && scoreHi >= 0 ? 0.0 : std::min(std::fabs(scoreLo), std::fabs(scoreHi));
  const double aHi = std::max(std::fabs(scoreLo), std::fabs(scoreHi));
  gLo = down(groupBudgetOf<double>(f, h, size, betaLo, aLo) * (1 - 0x1p-50));
  gHi = up(groupBudgetOf<double>(f, h, size, betaHi, aHi) * (1 + 0x1p-50));
}

// The least and greatest |v + add| over the real v in `value`, bounded outward in MPFR.
void magnitudeBounds(const oracle::certified::Interval& value, double add, RoundedDown& lo,
                     RoundedUp& hi) {
  oracle::certified::BigFloat vLo(RoundedDown::kPrecision), vHi(RoundedUp::kPrecision);
  mpfr_add_d(vLo.get(), value.lower.get(), add, MPFR_RNDD);
  mpfr_add_d(vHi.get(), value.upper.get(), add, MPFR_RNDU);
  const bool straddles = mpfr_sgn(vLo.get()) <= 0 && mpfr_sgn(vHi.get()) >= 0;
  const bool lowNearer = mpfr_cmpabs(vLo.get(), vHi.get()) < 0;
  mpfr_abs(vLo.get(), vLo.get(), MPFR_RNDN);  // exact
  mpfr_abs(vHi.get(), vHi.get(), MPFR_RNDN);
  lo = straddles ? RoundedDown(0.0) : RoundedDown(lowNearer ? vLo : vHi);
  hi = RoundedUp(lowNearer ? vHi : vLo);
}

void resizeBands(SelectionBands& b, size_t experts, size_t groups) {
  b.key.resize(experts);
  b.betaLo.resize(experts);
  b.betaHi.resize(experts);
  b.group.resize(groups);
  b.groupGamma.resize(groups);
}

}  // namespace

// The binary32 budget of one key, beta = |c32 - c| for a router that evaluates the spec in
// binary32 with an exp within `cUlp` ulp (docs/fuzz.md), at score s and key magnitude absC.
// `tinyAt` is the score that decides sigmoid's underflow term (a step, not monotone: the
// certified level passes the interval's other end to keep each bound on its side).
double keyBudget(const Family& f, double s, double tinyAt, double shift, double absC, int32_t E,
                 double cUlp) {
  return keyBudgetOf<double>(f, s, tinyAt, shift, absC, E, cUlp);
}

void evaluateRow(std::span<const float> x, const Family& f, double cUlp, FamilyRow& r) {
  const size_t E = x.size();
  const auto E32 = static_cast<int32_t>(E);
  for (auto* v : {&r.s, &r.serr, &r.c, &r.cerr, &r.beta, &r.betaErr}) v->resize(E);
  r.shift.assign(E, 0.0);
  r.form.resize(E);
  const bool bias = !f.bias.empty();
  if (isSoftmax(f)) {
    softmaxScores(x, r);
  } else {
    sigmoidScores(x, r);
  }
  for (size_t i = 0; i < E; ++i) {
    const double b = bias ? double{f.bias[i]} : 0.0;
    r.c[i] = r.s[i] + b;
    r.cerr[i] = r.serr[i] + (bias ? std::fabs(r.c[i]) * 0x1p-52 : 0.0);
    r.beta[i] = keyBudget(f, r.s[i], r.s[i], r.shift[i], std::fabs(r.c[i]), E32, cUlp);
    // The budget's slope in s (probabilityBudget's, or sigmoid's (2c + 4) u) and in |c|.
    const double sh = std::isinf(r.shift[i]) ? 0.0 : r.shift[i];
    const double slope =
        (isSoftmax(f) ? (sh + 2.0 * E + 4 * cUlp + 4) : (2 * cUlp + 4)) * kU32 * (1 + kU32);
    r.betaErr[i] = slope * r.serr[i] + kU32 * r.cerr[i] + r.beta[i] * 0x1p-48;
    r.form[i] = formOf(x[i], bias ? f.bias[i] : 0.0f);
  }
}

void groupsOf(const FamilyRow& r, const Family& f, int32_t E, Groups& g) {
  g.G = f.groups;
  g.size = E / f.groups;
  g.score.resize(static_cast<size_t>(g.G));
  g.err.resize(static_cast<size_t>(g.G));
  g.form.resize(static_cast<size_t>(g.G));
  const bool top2 = isTop2Sum(f) && g.size >= 2;
  const int m = top2 ? 2 : 1;
  for (int32_t h = 0; h < g.G; ++h) {
    // The group's first m + 1 members by key, as a stable sort by key (descending) orders
    // them: an expert goes before the first one it beats strictly, so equal keys keep index
    // order. Only these are read below.
    std::array<int32_t, 3> mem{};
    int32_t held = 0;
    const int32_t wanted = std::min(g.size, m + 1);
    for (int32_t i = h * g.size; i < (h + 1) * g.size; ++i) {
      int32_t at = held;
      while (at > 0 && r.c[i] > r.c[mem[at - 1]]) --at;
      if (at >= wanted) continue;
      for (int32_t q = std::min(held, wanted - 1); q > at; --q) mem[q] = mem[q - 1];
      mem[at] = i;
      held = std::min(held + 1, wanted);
    }
    double s = 0, err = 0;
    GroupForm form;
    for (int i = 0; i < m; ++i) {
      s += r.c[mem[i]];
      err += r.cerr[mem[i]];
      form.forms[i] = r.form[mem[i]];
    }
    err += std::fabs(s) * 0x1p-52;
    // The form is exact only when the best m are told apart from the rest.
    form.exact = true;
    if (g.size > m) {
      const int32_t last = mem[m - 1], next = mem[m];
      form.exact =
          r.form[last] == r.form[next] || r.c[last] - r.c[next] > r.cerr[last] + r.cerr[next];
    }
    if (m == 2 && form.forms[1] < form.forms[0]) std::swap(form.forms[0], form.forms[1]);
    if (!form.exact) form.forms = {};
    g.score[h] = s;
    g.err[h] = err;
    g.form[h] = form;
  }
}

double sigmoidGroupScore64(std::span<const float> x, const Family& f,
                           std::span<const int32_t> members, bool top2) {
  // groupsOf sums its first m members by key, largest first, from 0: the two largest keys
  // (the largest twice when it occurs twice).
  double first = -kInf, second = -kInf;
  for (int32_t i : members) {
    const double c = sigmoidKey64(x, f, i);
    if (c > first) {
      second = first;
      first = c;
    } else if (c > second) {
      second = c;
    }
  }
  double s = 0;
  s += first;
  if (top2) s += second;
  return s;
}

void doubleBands(const FamilyRow& r, const Groups* gr, const Family& f, SelectionBands& b) {
  const size_t E = r.c.size();
  resizeBands(b, E, gr ? static_cast<size_t>(gr->G) : 0);
  for (size_t i = 0; i < E; ++i) {
    b.betaLo[i] = std::max(0.0, r.beta[i] - r.betaErr[i]);
    b.betaHi[i] = r.beta[i] + r.betaErr[i];
    b.key[i] = bandOf(r.c[i] - r.cerr[i], r.c[i] + r.cerr[i], b.betaLo[i], b.betaHi[i]);
  }
  for (int32_t h = 0; gr && h < gr->G; ++h) {
    const double e = gr->err[h] + std::fabs(gr->score[h]) * 0x1p-51;
    double gLo, gHi;
    groupBudget(f, h, gr->size, b.betaLo, b.betaHi, gr->score[h] - e, gr->score[h] + e, gLo, gHi);
    b.group[h] = bandOf(gr->score[h] - e, gr->score[h] + e, gLo, gHi);
    b.groupGamma[h] = (gLo + gHi) / 2;
  }
}

void certifiedBands(std::span<const float> x, const Family& f, int32_t k, const FamilyRow& r,
                    const Groups* gr, double cUlp, double refKey, double refGroup,
                    SelectionBands& b) {
  const auto E = static_cast<int32_t>(x.size());
  const auto p = familyRouteParams(f, k);
  const auto s = oracle::certified::scoresEnclosure(p.score, x);
  resizeBands(b, x.size(), gr ? static_cast<size_t>(gr->G) : 0);
  // Each budget bounded at 192 bits from the ends of the score's enclosure (the formula is
  // increasing in s and |c|; tinyAt takes the other end, budget_formulas.hpp).
  std::vector<RoundedDown> betaLo(x.size());
  std::vector<RoundedUp> betaHi(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const auto& si = s[i].range;
    const double bias = f.bias.empty() ? 0.0 : double{f.bias[i]};
    RoundedDown aLo;
    RoundedUp aHi;
    magnitudeBounds(si, bias, aLo, aHi);
    betaLo[i] = keyBudgetOf(f, RoundedDown(si.lower), si.upperDouble(), r.shift[i], aLo, E, cUlp);
    betaHi[i] = keyBudgetOf(f, RoundedUp(si.upper), si.lowerDouble(), r.shift[i], aHi, E, cUlp);
    b.betaLo[i] = betaLo[i].toDouble();
    b.betaHi[i] = betaHi[i].toDouble();
    b.key[i] = relativeBand(si, bias, betaLo[i].value(), betaHi[i].value(), refKey);
  }
  if (!gr) return;
  const auto gs = oracle::certified::groupScoresEnclosure(p, x);
  for (int32_t h = 0; h < gr->G; ++h) {
    RoundedDown aLo;
    RoundedUp aHi;
    magnitudeBounds(gs[h].range, 0.0, aLo, aHi);
    const auto gLo =
        groupBudgetOf<RoundedDown>(f, h, gr->size, std::span<const RoundedDown>(betaLo), aLo);
    const auto gHi =
        groupBudgetOf<RoundedUp>(f, h, gr->size, std::span<const RoundedUp>(betaHi), aHi);
    b.group[h] = relativeBand(gs[h].range, 0.0, gLo.value(), gHi.value(), refGroup);
    b.groupGamma[h] = (gLo.toDouble() + gHi.toDouble()) / 2;
  }
}

}  // namespace moe::fuzz
