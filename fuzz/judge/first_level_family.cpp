// The first level for moe_route_v2 (first_level.hpp): scores and keys of the whole row in
// binary64 (the vector exp), each with a rigorous error bound; the token is `exact` when
// the router's groups are the spec's top groups and its experts the top keys of the eligible
// ones by more than every band the ladder's binary64 filter could draw around them, and
// every gate lies within its budget. docs/fuzz.md ("The first level") derives the radii.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "moe/fuzz/first_level.hpp"
#include "moe/fuzz/first_level_simd.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "verdict_slots.hpp"

namespace moe::fuzz::first {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The row in binary64: score s, key c = s + b, and the key's radius: |c64 - c| for this
// level's c64 plus twice the ladder's own error bound on its c (its bands reach that far
// from the real key), plus the ulps its bands round outward by.
struct Row {
  std::vector<double> t, s, serr, c, radius, beta;
  double m = 0;
};

void scores(std::span<const float> x, const Family& f, Row& r) {
  const size_t E = x.size();
  r.t.resize(E);
  r.s.resize(E);
  r.serr.resize(E);
  if (f.score == 1) {
    sigmoidScores(x, r.t, r.s, r.serr);
    return;
  }
  float m = x[0];
  for (float v : x) m = std::max(m, v);
  r.m = m;
  for (size_t i = 0; i < E; ++i) r.t[i] = static_cast<double>(m) - static_cast<double>(x[i]);
  expNeg(r.t, r.s);
  // P_i within (kExpRel + t_i 2^-52) P_i + kExpAbs; the sum D >= 1 (exp(0) = 1 exactly) with
  // relative error sumRel; s_i = P_i / D adds one rounding.
  double D = 0, Derr = 0;
  for (size_t i = 0; i < E; ++i) {
    D += r.s[i];
    if (r.s[i] > 0) Derr += r.s[i] * (kExpRel + r.t[i] * 0x1p-52);
  }
  const double sumRel = (Derr + E * kExpAbs) / D + (E + 1.0) * 0x1p-53;
  for (size_t i = 0; i < E; ++i) {
    const double own = r.s[i] > 0 ? kExpRel + r.t[i] * 0x1p-52 : 0.0;
    r.s[i] /= D;
    r.serr[i] = r.s[i] * (own + 2 * sumRel + 0x1p-52) + 2 * kExpAbs;
  }
}

// Keys, radii and an upper bound of each key's binary32 budget (keyBudget of the ladder, at
// the upper ends of s and |c|, with its error term): first_level_simd's keyBands. The
// radius of c is |c64 - c| for this level's c64 (cerr: serr, and a rounding of s + b) plus
// twice the ladder's own error bound on its c (verdict_family.cpp's evaluate: s
// (t + 2E + 8) 2^-52 or s 2^-50, plus 2^-1022; |c| 2^-52 with a bias), plus the ulps its
// bands round outward by.
void keys(const Family& f, double cUlp, Row& r) {
  const size_t E = r.s.size();
  r.c.resize(E);
  r.radius.resize(E);
  r.beta.resize(E);
  keyBands({r.t, r.s, r.serr, f.bias, f.score, cUlp}, r.c, r.radius, r.beta);
}

// The groups the spec keeps whatever the rounding: the topk_groups best by this level's
// group scores, apart from every other group by more than both groups' radii (the radius of
// a group score: its error here, twice the ladder's, and its binary32 budget gamma). False
// when no such gap exists or the router keeps an expert outside them; else `eligible` marks
// the experts of the kept groups.
bool keptGroups(const Family& f, const Row& r, std::span<const int32_t> S,
                std::vector<uint8_t>& eligible) {
  const auto E = static_cast<int32_t>(r.c.size());
  const int32_t G = f.groups, size = E / G;
  eligible.assign(static_cast<size_t>(E), 1);
  if (G <= 1 || f.topkGroups >= G) return true;
  const bool top2 = f.groupScore == 1 && size >= 2;
  thread_local std::vector<double> lo, hi;
  thread_local std::vector<int32_t> order;
  lo.resize(static_cast<size_t>(G));
  hi.resize(static_cast<size_t>(G));
  order.resize(static_cast<size_t>(G));
  for (int32_t h = 0; h < G; ++h) {
    const auto at = static_cast<size_t>(h * size), n = static_cast<size_t>(size);
    const GroupTop top = groupTop(std::span(r.c).subspan(at, n), std::span(r.radius).subspan(at, n),
                                  std::span(r.beta).subspan(at, n));
    const double best = top.best, second = top.second, radius = top.radius, beta = top.beta;
    const double score = top2 ? best + second : best;
    const double m = top2 ? 2.0 : 1.0;
    double gamma = m * beta;
    if (top2) gamma += kU32 * (std::fabs(score) + m * radius) + kTiny32;
    const double rad = (m * radius + gamma + std::fabs(score) * 0x1p-48) * (1 + 0x1p-20);
    lo[h] = score - rad;
    hi[h] = score + rad;
    order[h] = h;
  }
  const int32_t t = f.topkGroups;
  std::nth_element(order.begin(), order.begin() + (t - 1), order.end(),
                   [&](int32_t a, int32_t b) { return lo[a] + hi[a] > lo[b] + hi[b]; });
  double keptLo = kInf, restHi = -kInf;
  for (int32_t q = 0; q < G; ++q) {
    const int32_t h = order[q];
    if (q < t) {
      keptLo = std::min(keptLo, lo[h]);
    } else {
      restHi = std::max(restHi, hi[h]);
    }
  }
  if (!(keptLo > restHi)) return false;
  for (int32_t q = t; q < G; ++q) {
    const int32_t h = order[q];
    std::fill(eligible.begin() + h * size, eligible.begin() + (h + 1) * size, 0);
  }
  for (int32_t e : S) {
    if (!eligible[e]) return false;
  }
  return true;
}

uint64_t formOf(float x, float b) {
  auto bits = [](float v) { return bitsOf(v == 0.0f ? 0.0f : v); };
  return (uint64_t{bits(x)} << 32) | bits(b);
}

// Kept keys above every eligible displaced key by more than both radii; with rank order,
// each slot's key above the next one's the same way (or exactly equal keys in index order).
bool keysApart(std::span<const float> x, const Family& f, const Row& r, std::span<const int32_t> S,
               const std::vector<uint8_t>& eligible, bool rankOrder) {
  double keptLo = kInf;
  for (int32_t i : S) keptLo = std::min(keptLo, r.c[i] - r.radius[i]);
  const auto E = static_cast<int32_t>(x.size());
  const int32_t groups = f.groups, size = E / groups;
  // Every kept key is not below keptLo; so the eligible ones not below it (the kept groups,
  // each a run of experts, counted by a vector scan) must be the kept ones alone.
  size_t notBelow = 0;
  for (int32_t h = 0; h < groups; ++h) {
    if (!eligible[h * size]) continue;
    const auto at = static_cast<size_t>(h * size), n = static_cast<size_t>(size);
    notBelow +=
        countNotBelow(std::span(r.c).subspan(at, n), std::span(r.radius).subspan(at, n), keptLo);
  }
  if (notBelow != S.size()) return false;
  if (!rankOrder) return true;
  const bool bias = !f.bias.empty();
  for (size_t s = 0; s + 1 < S.size(); ++s) {
    const int32_t i = S[s], j = S[s + 1];
    if (formOf(x[i], bias ? f.bias[i] : 0.0f) == formOf(x[j], bias ? f.bias[j] : 0.0f)) {
      if (j < i) return false;
      continue;
    }
    if (!(r.c[i] - r.radius[i] > r.c[j] + r.radius[j])) return false;
  }
  return true;
}

// Every gate within its budget without the spec32 term (which only adds), as the ladder's
// first comparison: the gate enclosed in [lo, hi], the budget at the end nearer zero, every
// estimate inside it (sums, the weighted shift) taken on the side that makes it smaller.
bool gatesWithin(const Family& f, const Row& r, std::span<const int32_t> S,
                 std::span<const float> gates, const Contract& contract,
                 const VerdictConfig& config) {
  const auto n = static_cast<int32_t>(S.size());
  const auto E = static_cast<int32_t>(r.s.size());
  const double cUlp = contract.expMaxUlp;
  const double U = config.gateUlp.value_or(contract.gateBudget.ulp);
  const double scale = f.scale, aScale = std::fabs(scale);
  const bool renorm = f.renormalize == 1;
  double sumS = 0, sumErr = 0;
  for (int32_t e : S) sumS += r.s[e], sumErr += r.serr[e];
  sumErr += (n + 1) * 0x1p-53 * sumS;
  const double sumLo = sumS - sumErr, sumHi = sumS + sumErr;
  if (renorm && !(sumLo > 0)) return false;
  double weighted = 0;
  if (f.score == 0) {
    for (int32_t e : S) {
      if (std::isfinite(r.t[e]) && r.s[e] > 0) weighted += r.s[e] / sumS * r.t[e];
    }
    weighted *= kSafety;
  }
  auto floorOf = [&](int32_t e, double aG) {
    if (!config.analyticFloor) return 0.0;
    const double sh = std::isfinite(r.t[e]) ? r.t[e] : 0.0;
    if (renorm) {
      if (f.score == 0) {
        return gateFloor(aG, sh, weighted, n, E, cUlp) + kU32 * aG +
               aScale * (E + 1.0) * (n + 1.0) * (cUlp + 2) * kTiny32;
      }
      return (4 * cUlp + 2.0 * n + 10) * kU32 * aG +
             aScale * (n + 1.0) * ((cUlp + 2) * kTiny32 + 0x1p-126) / sumHi;
    }
    if (f.score == 0) {
      return probabilityBudget(aG, sh, E, cUlp) + kU32 * aG + aScale * (cUlp + 2) * kTiny32;
    }
    const bool tiny = (r.s[e] + r.serr[e]) * (1 + 0x1p-30) < 0x1p-125;
    return (2 * cUlp + 5) * kU32 * aG + aScale * ((cUlp + 2) * kTiny32 + (tiny ? 0x1p-126 : 0.0));
  };
  for (int32_t s = 0; s < n; ++s) {
    const int32_t e = S[s];
    double G, err;
    if (renorm) {
      G = r.s[e] / sumS * scale;
      err =
          aScale * (r.serr[e] + r.s[e] / sumS * sumErr) / sumLo + std::fabs(G) * 0x1p-51 + kExpAbs;
    } else {
      G = r.s[e] * scale;
      err = aScale * r.serr[e] + std::fabs(G) * 0x1p-52 + kExpAbs;
    }
    const double lo = G - err, hi = G + err, g = gates[s];
    const double devHi = std::max(std::fabs(g - lo), std::fabs(g - hi));
    const double aLo = (lo <= 0 && hi >= 0) ? 0.0 : std::min(std::fabs(lo), std::fabs(hi));
    const double budget = U * ulp32(aLo) + floorOf(e, aLo);
    if (!(devHi <= budget * kSafety)) return false;
  }
  return true;
}

// A family inside route_abi.h's domain, checked field by field without building a reason:
// anything else goes to the ladder.
bool plainFamily(const Family& f, int32_t E) {
  return (f.score == 0 || f.score == 1) && (f.groupScore == 0 || f.groupScore == 1) &&
         (f.renormalize == 0 || f.renormalize == 1) && f.groups >= 1 && E % f.groups == 0 &&
         f.topkGroups >= 1 && f.topkGroups <= f.groups && std::isfinite(f.scale) &&
         f.structShort == 0 && (f.bias.empty() || f.bias.size() == static_cast<size_t>(E));
}

bool realFamilyRow(std::span<const float> x, const Family& f, bool rowReal) {
  if (x.empty() || !allFinite(f.bias)) return false;
  if (f.score == 0) return rowReal;
  return !anyNaN(x);
}

}  // namespace

void familyScores(std::span<const float> x, const Family& f, std::vector<double>& s,
                  std::vector<double>& serr) {
  Row r;
  scores(x, f, r);
  s = std::move(r.s);
  serr = std::move(r.serr);
}

Decided decideFamilyToken(std::span<const float> x, const Family& f, int32_t k,
                          std::span<const int32_t> ids, std::span<const float> gates,
                          const Contract& contract, const VerdictConfig& config) {
  const auto E = static_cast<int32_t>(x.size());
  if (!plainFamily(f, E)) return Decided::kNo;
  const int32_t n = std::min(k, familyEligible(f, E));
  const bool real = realFamilyRow(x, f, f.score == 0 && scanRow(x).real);
  thread_local std::vector<uint8_t> inS, eligible;
  // The context of a certificate is not needed: a structure violation goes to the ladder.
  if (checkSlots(E, k, {n, "min(k, eligible)", ""}, ids, gates, real, false, inS)) {
    return Decided::kNo;
  }
  if (E == 0 || n == 0) return Decided::kExact;
  if (!real) return Decided::kNonrealRow;
  const std::span<const int32_t> S = ids.first(static_cast<size_t>(n));
  for (int32_t s = 0; s < n; ++s) {
    const float g = gates[s];
    if (!(std::isfinite(g) && (f.scale >= 0 ? !(g < 0.0f) : !(g > 0.0f)))) return Decided::kNo;
  }
  thread_local Row r;
  scores(x, f, r);
  // The ladder excuses renormalised gates of scores below 2^-100 ("tiny-scores"): only
  // tokens clearly above that are decided here.
  double keptMax = 0;
  for (int32_t e : S) keptMax = std::max(keptMax, r.s[e] - r.serr[e]);
  if (f.renormalize == 1 && !(keptMax * kSafety > 0x1p-100)) return Decided::kNo;
  keys(f, contract.expMaxUlp, r);
  if (!keptGroups(f, r, S, eligible)) return Decided::kNo;
  if (!keysApart(x, f, r, S, eligible, contract.slotOrder == SlotOrder::kRank)) {
    return Decided::kNo;
  }
  if (!gatesWithin(f, r, S, gates.first(static_cast<size_t>(n)), contract, config)) {
    return Decided::kNo;
  }
  return Decided::kExact;
}

}  // namespace moe::fuzz::first
