// judgeFamilyToken: one token of a moe_route_v2 router against the routing family's spec
// (docs/fuzz.md, "The routing family": the checks, their order and the budgets' derivation).
// Selection is judged on the biased keys c = s + b and on the group scores, each within a
// budget derived from the binary32 evaluation; exactly equal keys or group scores (equal
// inputs) go to the lower index and are never excused; gates are checked against the
// UNBIASED scores of the router's own kept set, and a gate beyond its budget is named by
// the cause that explains it (the bias, the scale, the renormalisation).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "certified_band.hpp"
#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/family.hpp"
#include "verdict_slots.hpp"

namespace moe::fuzz {

namespace {

constexpr double kAbs = 0x1p-1022;  // the binary64 filter's absolute term (verdict_token.cpp)
constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal inputs, equal real keys: the logit (-0 as +0) and the bias. Two experts whose forms
// agree tie exactly over the reals; the converse is not needed (unequal forms are judged
// as near-ties, to the router's benefit).
uint64_t formOf(float x, float b) {
  auto bits = [](float v) { return bitsOf(v == 0.0f ? 0.0f : v); };
  return (uint64_t{bits(x)} << 32) | bits(b);
}

// The binary32 budget of one key, beta = |c32 - c| for a router that evaluates the spec in
// binary32 with an exp within `cUlp` ulp (docs/fuzz.md), at score s and key magnitude absC.
// `tinyAt` is the score that decides sigmoid's underflow term (a step, not monotone: the
// certified level passes the interval's other end to keep each bound on its side).
double keyBudget(const Family& f, double s, double tinyAt, double shift, double absC, int32_t E,
                 double cUlp) {
  double beta;
  if (f.score == 0) {
    beta = probabilityBudget(s, std::isinf(shift) ? 0.0 : shift, E, cUlp);
  } else {
    // binary32: expf (c + 1/2 ulp) then 1 + e and 1 / d: (2c + 3) u relative, with slack
    // (2c + 4) u; below 2^-126 (x < -87.3, where expf(-x) also overflows to inf and the
    // quotient to 0) the absolute 2^-126.
    beta = (2 * cUlp + 4) * kU32 * s + (cUlp + 2) * kTiny32 + (tinyAt < 0x1p-125 ? 0x1p-126 : 0.0);
  }
  // fl(s32 + b): one more rounding of the key, and s32's own error.
  if (!f.bias.empty()) beta = beta * (1 + kU32) + kU32 * absC + kTiny32;
  return beta;
}

// The row in binary64: scores s with error err (|s64 - s| <= err), keys c = s + b with
// cerr, beta = keyBudget with its own error betaErr (beta is increasing in s and |c|).
struct FamilyRow {
  std::vector<double> s, serr, c, cerr, beta, betaErr, shift;
  std::vector<uint64_t> form;
  double m = 0;
};

FamilyRow evaluate(std::span<const float> x, const Family& f, double cUlp) {
  const size_t E = x.size();
  const auto E32 = static_cast<int32_t>(E);
  FamilyRow r;
  r.s.resize(E);
  r.serr.resize(E);
  r.c.resize(E);
  r.cerr.resize(E);
  r.beta.resize(E);
  r.betaErr.resize(E);
  r.shift.assign(E, 0.0);
  r.form.resize(E);
  const bool bias = !f.bias.empty();
  if (f.score == 0) {
    float m = x[0];
    for (float v : x) m = m <= v ? v : m;
    r.m = m;
    double D = 0;
    for (size_t i = 0; i < E; ++i) {
      r.shift[i] = x[i] == -INFINITY ? kInf : static_cast<double>(m) - x[i];
      r.s[i] = std::isinf(r.shift[i]) ? 0.0 : std::exp(-r.shift[i]);
      D += r.s[i];
    }
    for (size_t i = 0; i < E; ++i) {
      r.s[i] /= D;
      const double sh = std::isinf(r.shift[i]) ? 0.0 : r.shift[i];
      r.serr[i] = r.s[i] * (sh + 2.0 * E + 8) * 0x1p-52 + kAbs;
    }
  } else {
    for (size_t i = 0; i < E; ++i) {
      // 1 / (1 + exp(-x)): exp's argument is exact, exp < 1 ulp, two roundings.
      r.s[i] = x[i] == -INFINITY  ? 0.0
               : x[i] == INFINITY ? 1.0
                                  : 1.0 / (1.0 + std::exp(-double{x[i]}));
      r.serr[i] = r.s[i] * 0x1p-50 + kAbs;
    }
  }
  for (size_t i = 0; i < E; ++i) {
    const double b = bias ? double{f.bias[i]} : 0.0;
    r.c[i] = r.s[i] + b;
    r.cerr[i] = r.serr[i] + (bias ? std::fabs(r.c[i]) * 0x1p-52 : 0.0);
    r.beta[i] = keyBudget(f, r.s[i], r.s[i], r.shift[i], std::fabs(r.c[i]), E32, cUlp);
    // The budget's slope in s (probabilityBudget's, or sigmoid's (2c + 4) u) and in |c|.
    const double sh = std::isinf(r.shift[i]) ? 0.0 : r.shift[i];
    const double slope =
        (f.score == 0 ? (sh + 2.0 * E + 4 * cUlp + 4) : (2 * cUlp + 4)) * kU32 * (1 + kU32);
    r.betaErr[i] = slope * r.serr[i] + kU32 * r.cerr[i] + r.beta[i] * 0x1p-48;
    r.form[i] = formOf(x[i], bias ? f.bias[i] : 0.0f);
  }
  return r;
}

// Widen a binary64 result by one ulp each way (one rounding to nearest).
double down(double v) {
  return nextDown64(v);
}
double up(double v) {
  return nextUp64(v);
}

// A quantity and its budget, enclosed: L = value - budget in [lLo, lHi] and
// H = value + budget in [hLo, hHi]. "a beats b beyond the budget" is L_a > H_b: sure when
// lLo_a > hHi_b, excluded when lHi_a <= hLo_b, undecided between.
struct Band {
  double lLo = 0, lHi = 0, hLo = 0, hHi = 0;
};

Band bandOf(double vLo, double vHi, double bLo, double bHi) {
  return {down(vLo - bHi), up(vHi - bLo), down(vLo + bLo), up(vHi + bHi)};
}

// Group scores with their binary64 error and exact-tie form.
struct Groups {
  int32_t G = 1, size = 0;
  std::vector<double> score, err;
  std::vector<std::vector<int32_t>> best;   // the group's best one or two keys (binary64)
  std::vector<std::vector<uint64_t>> form;  // empty: no exact form (never an exact tie)
};

Groups groupsOf(const FamilyRow& r, const Family& f, int32_t E) {
  Groups g;
  g.G = f.groups;
  g.size = E / f.groups;
  const bool top2 = f.groupScore == 1 && g.size >= 2;
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
    std::vector<uint64_t> form;
    for (int i = 0; i < m; ++i) {
      s += r.c[mem[i]];
      err += r.cerr[mem[i]];
      form.push_back(r.form[mem[i]]);
    }
    err += std::fabs(s) * 0x1p-52;
    // The form is exact only when the best m are told apart from the rest.
    if (g.size > m) {
      const int32_t last = mem[m - 1], next = mem[m];
      if (!(r.form[last] == r.form[next] || r.c[last] - r.c[next] > r.cerr[last] + r.cerr[next])) {
        form.clear();
      }
    }
    std::sort(form.begin(), form.end());
    g.score.push_back(s);
    g.err.push_back(err);
    g.best.emplace_back(mem.begin(), mem.begin() + m);
    g.form.push_back(std::move(form));
  }
  return g;
}

// The group budget gamma from the keys' budgets in [betaLo, betaHi]: max is exact on the
// rounded keys, so the largest beta of the group; a top-2 sum the two largest plus its own
// rounding u |sum| + 2^-149 (any two keys the kernel picks, in either order).
void groupBudget(const Family& f, int32_t h, int32_t size, std::span<const double> betaLo,
                 std::span<const double> betaHi, double scoreLo, double scoreHi, double& gLo,
                 double& gHi) {
  const bool top2 = f.groupScore == 1 && size >= 2;
  // The largest and second largest of the group's budgets (equal values count twice).
  auto twoLargest = [&](std::span<const double> v, double& first, double& second) {
    first = second = -kInf;
    for (int32_t i = h * size; i < (h + 1) * size; ++i) {
      if (v[i] > first) {
        second = first;
        first = v[i];
      } else if (v[i] > second) {
        second = v[i];
      }
    }
  };
  double lo0, lo1, hi0, hi1;
  twoLargest(betaLo, lo0, lo1);
  twoLargest(betaHi, hi0, hi1);
  gLo = lo0 + (top2 ? lo1 : 0.0);
  gHi = hi0 + (top2 ? hi1 : 0.0);
  if (top2) {
    const double aLo =
        scoreLo <= 0 && scoreHi >= 0 ? 0.0 : std::min(std::fabs(scoreLo), std::fabs(scoreHi));
    gLo += kU32 * aLo + kTiny32;
    gHi += kU32 * std::max(std::fabs(scoreLo), std::fabs(scoreHi)) + kTiny32;
  }
  gLo = down(gLo * (1 - 0x1p-50));
  gHi = up(gHi * (1 + 0x1p-50));
}

// The selection's bands for every expert (key c) and group (group score), from the
// binary64 row.
struct SelectionBands {
  std::vector<Band> key, group;
  std::vector<double> groupGamma;  // binary64 budget of each group, for reports
};

SelectionBands doubleBands(const FamilyRow& r, const Groups* gr, const Family& f) {
  const size_t E = r.c.size();
  SelectionBands b;
  std::vector<double> betaLo(E), betaHi(E);
  for (size_t i = 0; i < E; ++i) {
    betaLo[i] = std::max(0.0, r.beta[i] - r.betaErr[i]);
    betaHi[i] = r.beta[i] + r.betaErr[i];
    b.key.push_back(bandOf(r.c[i] - r.cerr[i], r.c[i] + r.cerr[i], betaLo[i], betaHi[i]));
  }
  if (gr) {
    for (int32_t h = 0; h < gr->G; ++h) {
      const double e = gr->err[h] + std::fabs(gr->score[h]) * 0x1p-51;
      double gLo, gHi;
      groupBudget(f, h, gr->size, betaLo, betaHi, gr->score[h] - e, gr->score[h] + e, gLo, gHi);
      b.group.push_back(bandOf(gr->score[h] - e, gr->score[h] + e, gLo, gHi));
      b.groupGamma.push_back((gLo + gHi) / 2);
    }
  }
  return b;
}

// The same bands from MPFR enclosures of the scores (relative width 2^-60) and of the group
// scores (oracle/certified/family.hpp): the level that places a difference the binary64
// filter leaves within its error of the budget. Every key band is relative to refKey and
// every group band to refGroup (certified_band.hpp: the ends are differences computed in
// MPFR, so near the references their binary64 rounding is that of the difference; the
// comparisons, among keys or among groups, are unchanged by the shift). Throws SpecError
// where the oracle does.
SelectionBands certifiedBands(std::span<const float> x, const Family& f, int32_t k,
                              const FamilyRow& r, const Groups* gr, double cUlp, double refKey,
                              double refGroup) {
  const auto E = static_cast<int32_t>(x.size());
  const auto p = familyRouteParams(f, k);
  const auto s = oracle::certified::scoresEnclosure(p.score, x);
  SelectionBands b;
  std::vector<double> betaLo(x.size()), betaHi(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double sLo = s[i].range.lowerDouble(), sHi = s[i].range.upperDouble();
    const double bias = f.bias.empty() ? 0.0 : double{f.bias[i]};
    const double cLo = f.bias.empty() ? sLo : down(sLo + bias);
    const double cHi = f.bias.empty() ? sHi : up(sHi + bias);
    const double aLo = cLo <= 0 && cHi >= 0 ? 0.0 : std::min(std::fabs(cLo), std::fabs(cHi));
    const double aHi = std::max(std::fabs(cLo), std::fabs(cHi));
    betaLo[i] = down(keyBudget(f, sLo, sHi, r.shift[i], aLo, E, cUlp) * (1 - 0x1p-50));
    betaHi[i] = up(keyBudget(f, sHi, sLo, r.shift[i], aHi, E, cUlp) * (1 + 0x1p-50));
    const RelativeBand kb = relativeBand(s[i].range, bias, betaLo[i], betaHi[i], refKey);
    b.key.push_back({kb.lLo, kb.lHi, kb.hLo, kb.hHi});
  }
  if (gr) {
    const auto gs = oracle::certified::groupScoresEnclosure(p, x);
    for (int32_t h = 0; h < gr->G; ++h) {
      const double lo = gs[h].range.lowerDouble(), hi = gs[h].range.upperDouble();
      double gLo, gHi;
      groupBudget(f, h, gr->size, betaLo, betaHi, lo, hi, gLo, gHi);
      const RelativeBand gb = relativeBand(gs[h].range, 0.0, gLo, gHi, refGroup);
      b.group.push_back({gb.lLo, gb.lHi, gb.hLo, gb.hHi});
      b.groupGamma.push_back((gLo + gHi) / 2);
    }
  }
  return b;
}
enum class Decision { kWithin, kBeyond, kUndecided };

// What the gates of a token share against the spec's (measured, never a cause): one factor
// for every slot, and what the kept gates sum to. "" when no pattern holds.
std::string gatePattern(std::span<const float> gates, const std::vector<double>& spec, double scale,
                        bool renorm) {
  std::string out;
  double first = 0, sum = 0, specSum = 0;
  bool common = !spec.empty();
  for (size_t s = 0; s < spec.size(); ++s) {
    sum += gates[s];
    specSum += spec[s];
    if (!(spec[s] != 0)) {
      common = false;
      continue;
    }
    const double ratio = gates[s] / spec[s];
    if (s == 0) first = ratio;
    common = common && std::fabs(ratio - first) <= 64 * kU32 * std::fabs(first);
  }
  if (common && std::isfinite(first)) {
    out = fmt::format("every gate off by the same factor {:.9g}", first);
  }
  if (renorm) {
    out += fmt::format("{}the kept gates sum to {:.9g} (the scale {:.9g}: off by {:.3g})",
                       out.empty() ? "" : "; ", sum, scale, sum - specSum);
  }
  return out;
}

std::string keyText(std::span<const float> x, const Family& f, const FamilyRow& r, int32_t e) {
  return fmt::format(
      "expert {}: x = {} ({}){} s = {:.9g} key s + b = {:.9g}", e, decimal32(x[e]), hex32(x[e]),
      f.bias.empty() ? "" : fmt::format(" b = {} ({})", decimal32(f.bias[e]), hex32(f.bias[e])),
      r.s[e], r.c[e]);
}

}  // namespace

Verdict judgeFamilyToken(std::span<const float> x, const Family& f, int32_t k,
                         std::span<const int32_t> ids, std::span<const float> gates,
                         const Contract& contract, const VerdictConfig& config,
                         LevelCounters& levels) {
  const int32_t E = static_cast<int32_t>(x.size());
  const int32_t n = std::min(k, familyEligible(f, E));
  const TieOrder ties = config.tieOrder.value_or(contract.tieOrder);
  const double cUlp = contract.expMaxUlp;
  bool real = E > 0;
  for (float v : x) real = real && !std::isnan(v);
  if (f.score == 0 && E > 0) real = real && isRealRow(x);
  for (float b : f.bias) real = real && std::isfinite(b);

  // Structure: n = min(k, eligible) distinct ids in range, then empty slots.
  std::vector<uint8_t> inS;
  const SlotsOwed owed{n, "min(k, eligible)", fmt::format(" ({})", familyText(f))};
  if (auto v = checkSlots(E, k, owed, ids, gates, real, false, inS)) return *v;
  if (E == 0 || n == 0) return Verdict{};
  if (!real) {
    Verdict v;
    v.outcome = Outcome::kAcceptable;
    v.reason = "nonreal-row";
    return v;
  }
  const std::span<const int32_t> S = ids.first(static_cast<size_t>(n));
  const FamilyRow r = evaluate(x, f, cUlp);
  // Renormalising scores that binary32 flushes to zero is 0/0: no gate is owed there.
  double maxKeptS = 0;
  for (int32_t e : S) maxKeptS = std::max(maxKeptS, r.s[e]);
  const bool tinyGates = f.renormalize == 1 && maxKeptS < 0x1p-100;
  for (int32_t s = 0; s < n; ++s) {
    const float g = gates[s];
    const bool signOk = f.scale >= 0 ? !(g < 0.0f) : !(g > 0.0f);
    if (!tinyGates && !(std::isfinite(g) && signOk)) {
      return violation(ViolationKind::kGateNonfinite,
                       fmt::format("slot {} (expert {}) has gate {} ({}); the spec's gates are "
                                   "finite with the scale's sign on this row",
                                   s, S[s], decimal32(g), hex32(g)));
    }
  }

  Verdict result;
  auto accept = [&](const char* reason) {
    if (result.outcome == Outcome::kExact) {
      result.outcome = Outcome::kAcceptable;
      result.reason = reason;
    }
  };
  const bool lowest = ties == TieOrder::kLowestIndex;
  std::optional<Groups> gr;
  if (f.groups > 1) gr = groupsOf(r, f, E);

  // The kept experts may lie in at most topk_groups groups: structure, no budget.
  std::vector<uint8_t> routerGroup;  // 1: the router keeps an expert of it
  if (gr) {
    routerGroup.assign(static_cast<size_t>(gr->G), 0);
    int32_t spanned = 0;
    for (int32_t e : S) {
      const int32_t g = e / gr->size;
      spanned += routerGroup[g] ? 0 : 1;
      routerGroup[g] = 1;
    }
    if (spanned > f.topkGroups) {
      return violation(ViolationKind::kKeptGroup,
                       fmt::format("the kept experts lie in {} groups, but only topk_groups = {} "
                                   "groups are kept ({})",
                                   spanned, f.topkGroups, familyText(f)));
    }
  }

  // One pass of the selection's checks on bands B (binary64, then certified): a violation
  // sure on B, or none; `undecided` when some difference lies within B's width of its
  // budget; `accepts` the reasons the pass found.
  auto judgeSelection = [&](const SelectionBands& B, bool& undecided,
                            std::vector<const char*>& accepts) -> std::optional<Verdict> {
    undecided = false;
    accepts.clear();
    // 1 kept by the router, 2 kept by the spec whatever the rounding, 3 perhaps that (B
    // too wide to say): its experts count as displaced eligible ones only for `undecided`.
    std::vector<uint8_t> groupState(routerGroup);
    if (gr) {
      // h beats g beyond the budget when L_h > H_g; exactly equal forms tie, to the lower
      // group. Counted by sorting: O(G log G).
      const int32_t G = gr->G;
      std::vector<double> lLo, lHi, hLo, hHi, scoreSorted(gr->score);
      for (const Band& b : B.group) {
        lLo.push_back(b.lLo);
        lHi.push_back(b.lHi);
        hLo.push_back(b.hLo);
        hHi.push_back(b.hHi);
      }
      std::sort(lLo.begin(), lLo.end());
      std::sort(lHi.begin(), lHi.end());
      std::sort(hLo.begin(), hLo.end());
      std::sort(hHi.begin(), hHi.end());
      std::sort(scoreSorted.begin(), scoreSorted.end());
      auto above = [](const std::vector<double>& v, double t) {  // entries > t
        return static_cast<int32_t>(v.end() - std::upper_bound(v.begin(), v.end(), t));
      };
      auto below = [](const std::vector<double>& v, double t) {  // entries < t
        return static_cast<int32_t>(std::lower_bound(v.begin(), v.end(), t) - v.begin());
      };
      std::map<std::vector<uint64_t>, std::vector<int32_t>> sameForm;
      for (int32_t h = 0; h < G; ++h) {
        if (!gr->form[h].empty()) sameForm[gr->form[h]].push_back(h);
      }
      auto tiedBefore = [&](int32_t g) -> int32_t {  // lower groups with g's exact form
        if (gr->form[g].empty()) return 0;
        const auto& v = sameForm[gr->form[g]];
        return static_cast<int32_t>(std::lower_bound(v.begin(), v.end(), g) - v.begin());
      };
      auto tiedAfter = [&](int32_t g) -> int32_t {
        if (gr->form[g].empty()) return 0;
        const auto& v = sameForm[gr->form[g]];
        return static_cast<int32_t>(v.end() - std::upper_bound(v.begin(), v.end(), g));
      };
      for (int32_t g = 0; g < G; ++g) {
        if (groupState[g] != 1) continue;
        const int32_t beyond = above(lLo, B.group[g].hHi);
        const int32_t maybe = above(lHi, B.group[g].hLo);
        const int32_t tied = tiedBefore(g);
        if (beyond >= f.topkGroups) {
          int32_t worst = -1;  // the weakest of the groups that beat g beyond the budget
          for (int32_t h = 0; h < G; ++h) {
            if (B.group[h].lLo > B.group[g].hHi && (worst < 0 || gr->score[h] < gr->score[worst]))
              worst = h;
          }
          const double budget = B.groupGamma[worst] + B.groupGamma[g];
          return violation(
              ViolationKind::kKeptGroup,
              fmt::format("group {} (score {:.9g}) is kept, but {} groups beat it beyond the "
                          "binary32 budget (topk_groups = {}); the weakest of them, group {}, "
                          "scores {:.9g}: a difference of {:.6g} > budget {:.6g} ({}, group "
                          "score {})",
                          g, gr->score[g], beyond, f.topkGroups, worst, gr->score[worst],
                          gr->score[worst] - gr->score[g], budget, familyText(f),
                          f.groupScore == 1 ? "the sum of the two best keys" : "the best key"),
              budget > 0 ? (gr->score[worst] - gr->score[g]) / budget : kInf);
        }
        if (beyond + tied >= f.topkGroups) {
          if (lowest) {
            std::string lower;  // the tied lower-index groups, by name (the report shows them)
            for (int32_t h : sameForm[gr->form[g]]) {
              if (h < g) lower += fmt::format("{}group {}", lower.empty() ? "" : ", ", h);
            }
            return violation(
                ViolationKind::kGroupTieOrder,
                fmt::format("group {} is kept, but {} lower-index groups ({}) have "
                            "exactly the same group score {:.9g} (equal keys), and "
                            "with them topk_groups = {} or more groups rank above "
                            "it ({})",
                            g, tied, lower, gr->score[g], f.topkGroups, familyText(f)));
          }
          accepts.push_back("tie-order");
          continue;
        }
        if (maybe + tied >= f.topkGroups) undecided = true;
        if (above(scoreSorted, gr->score[g]) >= f.topkGroups) accepts.push_back("near-tie-groups");
      }
      // Groups the spec keeps whatever the rounding: g beats beyond the budget (or by an
      // exact tie to the lower index) all but fewer than topk_groups others.
      for (int32_t g = 0; g < G; ++g) {
        if (groupState[g]) continue;
        const int32_t tail = lowest ? tiedAfter(g) : 0;
        const int32_t notBeatenSure = (G - 1) - below(hHi, B.group[g].lLo) - tail;
        const int32_t notBeatenMaybe = (G - 1) - below(hLo, B.group[g].lHi) - tail;
        if (notBeatenSure < f.topkGroups) {
          groupState[g] = 2;
        } else if (notBeatenMaybe < f.topkGroups) {
          groupState[g] = 3;
        }
      }
    }
    auto state = [&](int32_t e) -> uint8_t { return gr ? groupState[e / gr->size] : uint8_t{1}; };

    // Keys: no eligible displaced expert beats a kept one beyond the budget, that is
    // max L_j <= min H_i (verdict_token.cpp).
    int32_t iStar = -1, jStar = -1;
    double minHhi = kInf, minHlo = kInf, maxLlo = -kInf, maxLhi = -kInf;
    for (int32_t i : S) {
      if (B.key[i].hHi < minHhi) minHhi = B.key[i].hHi, iStar = i;
      minHlo = std::min(minHlo, B.key[i].hLo);
    }
    for (int32_t j = 0; j < E; ++j) {
      const uint8_t st = state(j);
      if (inS[j] || st == 0) continue;
      maxLhi = std::max(maxLhi, B.key[j].lHi);
      if (st != 3 && B.key[j].lLo > maxLlo) maxLlo = B.key[j].lLo, jStar = j;
    }
    if (jStar >= 0 && maxLlo > minHhi) {
      const double budget = r.beta[iStar] + r.beta[jStar];
      // biased-key names the bias: only when the two experts' biases differ, so that the
      // bias is part of what decides between them; else the scores alone do (beaten-kept).
      const bool biasDecides = !f.bias.empty() && f.bias[jStar] != f.bias[iStar];
      return violation(
          biasDecides ? ViolationKind::kBiasedKey : ViolationKind::kBeatenKept,
          fmt::format("selection: eligible displaced {} beats kept {} by {:.6g} on "
                      "the {}, beyond the binary32 budget {:.6g} ({})",
                      keyText(x, f, r, jStar), keyText(x, f, r, iStar), r.c[jStar] - r.c[iStar],
                      biasDecides ? "biased keys" : "keys (equal biases or none)", budget,
                      familyText(f)),
          budget > 0 ? (r.c[jStar] - r.c[iStar]) / budget : kInf);
    }
    if (maxLhi > minHlo) undecided = true;
    double minC = kInf, maxC = -kInf;
    for (int32_t i : S) minC = std::min(minC, r.c[i]);
    for (int32_t j = 0; j < E; ++j) {
      if (!inS[j] && (state(j) == 1 || state(j) == 2)) maxC = std::max(maxC, r.c[j]);
    }
    if (maxC > minC) accepts.push_back("near-tie-keys");
    // Exactly equal keys (equal logit and bias) go to the lower index: a displaced eligible
    // j with the form of a kept i > j.
    std::map<uint64_t, int32_t> keptForm;  // form -> the highest kept index with it
    for (int32_t i : S) {
      auto [it, fresh] = keptForm.emplace(r.form[i], i);
      if (!fresh) it->second = std::max(it->second, i);
    }
    for (int32_t j = 0; j < E; ++j) {
      if (inS[j] || !(state(j) == 1 || state(j) == 2)) continue;
      const auto it = keptForm.find(r.form[j]);
      if (it == keptForm.end() || it->second < j) continue;
      if (!lowest) {
        accepts.push_back("tie-order");
        continue;
      }
      const int32_t i = it->second;
      return violation(ViolationKind::kTieHigherIndex,
                       fmt::format("selection: experts {} and {} have exactly equal keys (equal "
                                   "logits and biases); expert {} (the lower index) must be kept "
                                   "before expert {} ({}, {})",
                                   j, i, j, i, keyText(x, f, r, j), keyText(x, f, r, i)));
    }
    // Slot order on the keys.
    if (contract.slotOrder == SlotOrder::kRank) {
      for (int32_t s = 0; s + 1 < n; ++s) {
        const int32_t i = S[s], j = S[s + 1];
        if (r.form[i] == r.form[j]) {
          if (j < i) {
            if (!lowest) {
              accepts.push_back("tie-order");
              continue;
            }
            return violation(ViolationKind::kTieHigherIndex,
                             fmt::format("order: experts {} and {} have exactly equal keys, so "
                                         "expert {} must come first",
                                         i, j, j));
          }
          continue;
        }
        if (B.key[j].lLo > B.key[i].hHi) {
          const double budget = r.beta[i] + r.beta[j];
          return violation(ViolationKind::kSlotOrder,
                           fmt::format("order: {} in slot {} beats {} in slot {} by {:.6g} on the "
                                       "biased keys, beyond the budget {:.6g}",
                                       keyText(x, f, r, j), s + 1, keyText(x, f, r, i), s,
                                       r.c[j] - r.c[i], budget),
                           budget > 0 ? (r.c[j] - r.c[i]) / budget : kInf);
        }
        if (B.key[j].lHi > B.key[i].hLo) undecided = true;
        if (r.c[j] > r.c[i]) accepts.push_back("near-tie-order");
      }
    }
    return std::nullopt;
  };

  // The binary64 filter decides almost every token; what it cannot place against its
  // budget goes to the oracle: first its certified decision (a router that kept exactly
  // the real-number spec's experts, in its order, owes nothing), then the certified bands.
  // Counted once per token, at the level that decided.
  bool undecided = false;
  std::vector<const char*> accepts;
  if (auto v = judgeSelection(doubleBands(r, gr ? &*gr : nullptr, f), undecided, accepts)) {
    ++levels.selectionDouble;
    return *v;
  }
  if (!undecided) {
    ++levels.selectionDouble;
  } else {
    try {
      const auto p = familyRouteParams(f, k);
      const auto decision = oracle::certified::routeDecisionEnclosure(p, x);
      bool same = decision.decided && decision.keptExperts.size() == S.size();
      if (same && contract.slotOrder == SlotOrder::kRank) {
        same = std::equal(S.begin(), S.end(), decision.keptExperts.begin(),
                          [](int32_t a, size_t b) { return static_cast<size_t>(a) == b; });
      } else if (same) {
        for (int32_t e : S) same = same && decision.kept[static_cast<size_t>(e)];
      }
      if (same) {
        undecided = false;
      } else {
        // References at the kept boundary: the router's weakest kept key and group score.
        double refKey = kInf, refGroup = kInf;
        for (int32_t e : S) refKey = std::min(refKey, r.c[e]);
        for (int32_t g = 0; gr && g < gr->G; ++g) {
          if (routerGroup[g] == 1) refGroup = std::min(refGroup, gr->score[g]);
        }
        const SelectionBands cb = certifiedBands(x, f, k, r, gr ? &*gr : nullptr, cUlp,
                                                 std::isfinite(refKey) ? refKey : 0.0,
                                                 std::isfinite(refGroup) ? refGroup : 0.0);
        if (auto v = judgeSelection(cb, undecided, accepts)) {
          ++levels.selectionCertified;
          v->certificate += " [certified: MPFR enclosures of the scores and group scores]";
          return *v;
        }
      }
    } catch (const std::exception&) {
      undecided = true;  // the oracle abstained (too close past its precision cap)
    }
    ++(undecided ? levels.selectionUndecided : levels.selectionCertified);
  }
  for (const char* a : accepts) accept(a);
  // Gates of the router's own kept set against the unbiased scores.
  if (tinyGates) {
    accept("tiny-scores");
    return result;
  }
  const double scale = f.scale;
  double sumS = 0, sumSErr = 0;
  for (int32_t e : S) sumS += r.s[e], sumSErr += r.serr[e];
  sumSErr += n * 0x1p-53 * sumS;
  if (f.renormalize == 1 && !(sumS > 0)) return result;  // 0/0: not real
  // The binary32 spec's formula on S: scoresSpec<float>, the sum over S in index order.
  std::optional<std::vector<float>> g32;
  auto spec32 = [&]() -> const std::vector<float>& {
    if (!g32) {
      const auto s32 =
          oracle::scoresSpec(f.score == 1 ? oracle::ScoreFn::sigmoid : oracle::ScoreFn::softmax, x);
      std::vector<int32_t> byIndex(S.begin(), S.end());
      std::sort(byIndex.begin(), byIndex.end());
      float total = 0.0f;
      for (int32_t j : byIndex) total += s32[j];
      g32.emplace();
      for (int32_t e : S) g32->push_back((f.renormalize == 1 ? s32[e] / total : s32[e]) * f.scale);
    }
    return *g32;
  };
  // The kept set's weighted shift (softmax, renormalised: gateFloor's mean term).
  double weighted = 0;
  if (f.score == 0) {
    for (int32_t e : S) {
      if (std::isfinite(r.shift[e]) && r.s[e] > 0) weighted += r.s[e] / sumS * r.shift[e];
    }
  }
  const double F = config.gateFactor.value_or(contract.gateBudget.spec32Factor);
  const double U = config.gateUlp.value_or(contract.gateBudget.ulp);
  auto floorOf = [&](int32_t e, double G) {
    if (!config.analyticFloor) return 0.0;
    const double aG = std::fabs(G), aScale = std::fabs(scale);
    const double sh = std::isfinite(r.shift[e]) ? r.shift[e] : 0.0;
    if (f.renormalize == 1) {
      if (f.score == 0) {
        return gateFloor(aG, sh, weighted, n, E, cUlp) + kU32 * aG +
               aScale * (E + 1.0) * (n + 1.0) * (cUlp + 2) * kTiny32;
      }
      return (4 * cUlp + 2.0 * n + 10) * kU32 * aG +
             aScale * (n + 1.0) * ((cUlp + 2) * kTiny32 + 0x1p-126) / sumS;
    }
    if (f.score == 0) {
      // Raw softmax: the probability's budget, whose denominator sums E terms in any order
      // ((E - 1) u), then the scale's rounding.
      return probabilityBudget(aG, sh, E, cUlp) + kU32 * aG + aScale * (cUlp + 2) * kTiny32;
    }
    return (2 * cUlp + 5) * kU32 * aG +
           aScale * ((cUlp + 2) * kTiny32 + (r.s[e] < 0x1p-125 ? 0x1p-126 : 0.0));
  };
  std::optional<std::vector<oracle::certified::Certified>> exact;
  for (int32_t s = 0; s < n; ++s) {
    const int32_t e = S[s];
    double G, err;
    if (f.renormalize == 1) {
      G = r.s[e] / sumS * scale;
      err = std::fabs(G) * (r.serr[e] / std::max(r.s[e], 1e-300) + sumSErr / sumS + 0x1p-51) + kAbs;
      if (r.s[e] == 0) err = std::fabs(scale) * r.serr[e] / sumS + kAbs;
    } else {
      G = r.s[e] * scale;
      err = std::fabs(scale) * r.serr[e] + std::fabs(G) * 0x1p-52 + kAbs;
    }
    double gLo = G - err, gHi = G + err;
    const double g = gates[s];
    auto decide = [&](double lo, double hi, double& devLo, double& bHi) {
      const double devHi = std::max(std::fabs(g - lo), std::fabs(g - hi));
      devLo = (g >= lo && g <= hi) ? 0.0 : std::min(std::fabs(g - lo), std::fabs(g - hi));
      const double aLo = (lo <= 0 && hi >= 0) ? 0.0 : std::min(std::fabs(lo), std::fabs(hi));
      const double aHi = std::max(std::fabs(lo), std::fabs(hi));
      double bLo = U * ulp32(aLo) + floorOf(e, aLo);
      bHi = U * ulp32(aHi) + floorOf(e, aHi);
      if (devHi <= bLo) return Decision::kWithin;
      const double q = spec32()[static_cast<size_t>(s)];
      const double tHi = std::max(std::fabs(q - lo), std::fabs(q - hi));
      const double tLo =
          (q >= lo && q <= hi) ? 0.0 : std::min(std::fabs(q - lo), std::fabs(q - hi));
      bLo += F * tLo;
      bHi += F * tHi;
      if (devHi <= bLo) return Decision::kWithin;
      if (devLo > bHi) return Decision::kBeyond;
      return Decision::kUndecided;
    };
    double devLo = 0, bHi = 0;
    Decision d = decide(gLo, gHi, devLo, bHi);
    if (d != Decision::kUndecided) {
      ++levels.gateDouble;
    } else {
      try {
        if (!exact) {
          const auto p = familyRouteParams(f, k);
          std::vector<size_t> kept(S.begin(), S.end());
          exact = oracle::certified::routeKeptGatesEnclosure(p, x, kept);
        }
        gLo = (*exact)[static_cast<size_t>(s)].range.lowerDouble();
        gHi = (*exact)[static_cast<size_t>(s)].range.upperDouble();
        d = decide(gLo, gHi, devLo, bHi);
      } catch (const std::exception&) {
        d = Decision::kUndecided;
      }
      ++(d == Decision::kUndecided ? levels.gateUndecided : levels.gateCertified);
    }
    if (d != Decision::kBeyond) continue;
    // Beyond: name a cause only when one formula explains every slot of the token and
    // the case can tell it from the spec's own gates (a bias of zeros, a scale of 1, a
    // renormalisation by a sum of 1 cannot); else gate-error, with the pattern measured.
    // judgeCase confirms a named cause by a rerun where the router is at hand.
    auto fits = [&](double g, double alt) {
      return std::fabs(g - alt) <= 64 * kU32 * std::fabs(alt) + 0x1p-140;
    };
    auto formula = [&](auto weight, bool renorm, double factor, double total) {
      std::vector<double> out;
      if (total < 0) {
        total = 0;
        for (int32_t e2 : S) total += weight(e2);
      }
      for (int32_t s2 = 0; s2 < n; ++s2) {
        const double w = weight(S[s2]);
        out.push_back((renorm ? w / total : w) * factor);
      }
      return out;
    };
    const std::vector<double> spec =
        formula([&](int32_t j) { return r.s[j]; }, f.renormalize == 1, scale, -1);
    // The hypothesis explains every slot and differs from the spec's gates somewhere.
    auto explains = [&](const std::vector<double>& alt) {
      bool differs = false;
      for (int32_t s2 = 0; s2 < n; ++s2) {
        if (!fits(gates[s2], alt[s2])) return false;
        differs = differs || !fits(spec[s2], alt[s2]);
      }
      return differs;
    };
    auto unbiased = [&](int32_t j) { return r.s[j]; };
    auto biased = [&](int32_t j) { return r.c[j]; };
    const bool renorm = f.renormalize == 1;
    bool biasNonZero = false;
    for (int32_t e2 : S) biasNonZero = biasNonZero || (!f.bias.empty() && f.bias[e2] != 0.0f);
    ViolationKind kind = ViolationKind::kGateError;
    std::string cause, hypothesis;
    if (biasNonZero && (explains(formula(biased, renorm, scale, -1)) ||
                        explains(formula(biased, !renorm, scale, -1)))) {
      kind = ViolationKind::kGateBias;
      hypothesis = "bias";
      cause = "the gates are the biased keys s + b, not the scores s";
    } else if (scale != 1.0 && (explains(formula(unbiased, renorm, 1.0, -1)) ||
                                explains(formula(unbiased, renorm, scale * scale, -1)))) {
      kind = ViolationKind::kGateScale;
      hypothesis = "scale";
      cause = renorm ? "the scale is missing (scaled before renormalising, where it cancels?)"
                     : "the scale is missing or applied twice";
    } else if (explains(formula(unbiased, !renorm, scale, -1))) {
      kind = ViolationKind::kGateRenorm;
      hypothesis = "renorm-flag";
      cause = renorm ? "the gates are not renormalised" : "the gates are renormalised";
    } else if (renorm) {
      // Renormalised over another set the router has at hand: its eligible experts (the
      // groups it kept) or all of them.
      double eligibleSum = 0, allSum = 0;
      for (int32_t j = 0; j < E; ++j) {
        allSum += r.s[j];
        if (!gr || routerGroup[static_cast<size_t>(j / gr->size)]) eligibleSum += r.s[j];
      }
      for (const auto& [total, set] :
           {std::pair{eligibleSum, "its eligible experts"}, std::pair{allSum, "all the experts"}}) {
        if (explains(formula(unbiased, true, scale, total))) {
          kind = ViolationKind::kGateRenorm;
          hypothesis = "renorm-set";
          cause = fmt::format(
              "renormalised over {} (their scores sum to {:.9g}), not over the "
              "kept experts (theirs sum to {:.9g})",
              set, total, sumS);
          break;
        }
      }
    }
    if (kind == ViolationKind::kGateError) cause = gatePattern(gates.first(n), spec, scale, renorm);
    Verdict v = violation(
        kind,
        fmt::format(
            "slot {} (expert {}): gate {} ({}) but the exact gate of the router's kept set "
            "(unbiased scores{}, scale {}) is in [{:.17g}, {:.17g}]; |g - exact| >= {:.6g} > "
            "budget {:.6g} (spec32 gate {:.9g}, factor {}, {} ulp, floor {}){}",
            s, e, decimal32(gates[s]), hex32(gates[s]), renorm ? ", renormalised over S" : "",
            decimal32(f.scale), gLo, gHi, devLo, bHi,
            g32 ? (*g32)[static_cast<size_t>(s)] : std::nan(""), F, U,
            config.analyticFloor ? "on" : "off", cause.empty() ? "" : "; " + cause),
        bHi > 0 ? devLo / bHi : kInf);
    v.cause = hypothesis;
    if (!hypothesis.empty()) v.causeText = cause;
    return v;
  }
  return result;
}

}  // namespace moe::fuzz
