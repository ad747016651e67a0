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

#include "budget_formulas.hpp"
#include "family_bands.hpp"
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
  std::vector<double> t, s, serr, c, radius;
  double m = 0;
  // Per group (keptGroups): the group score, its keys' largest radius, and the radius of
  // the score with the group's binary32 budget gamma (groupRadius; NaN until asked).
  std::vector<double> gScore, gKeyRadius, gRadius;
  // The keys' identities asked for so far (keyIdOf).
  std::vector<uint64_t> id;
  bool idsKnown = false;
};

// The row's scores; for sigmoid scores, true when a logit is NaN (their pass finds it), for
// softmax false (a real row is the caller's to check first).
bool scores(std::span<const float> x, const Family& f, Row& r) {
  const size_t E = x.size();
  r.t.resize(E);
  r.s.resize(E);
  r.serr.resize(E);
  if (f.score == ScoreFunction::kSigmoid) return sigmoidScores(x, r.t, r.s, r.serr);
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
  return false;
}

// Keys and their radii: first_level_simd's keyBands. The radius of c is |c64 - c| for this level's
// c64 (cerr: serr, and a rounding of s + b) plus twice the ladder's own error bound on its c
// (verdict_family.cpp's evaluate: s (t + 2E + 8) 2^-52 or s 2^-50, plus 2^-1022; |c| 2^-52 with a
// bias), plus the ulps its bands round outward by.
void keys(const Family& f, Row& r) {
  const size_t E = r.s.size();
  r.c.resize(E);
  r.radius.resize(E);
  keyBands({r.t, r.s, r.serr, f.bias, f.score}, r.c, r.radius);
}

uint64_t formOf(float x, float b) {
  auto bits = [](float v) { return bitsOf(v == 0.0f ? 0.0f : v); };
  return (uint64_t{bits(x)} << 32) | bits(b);
}

// A key's value in binary64, as both levels compute it, named by its inputs: the form
// (logit and bias), except for sigmoid scores of logits >= 37.5, where exp(-x) < 2^-54 and
// 1 + exp(-x) rounds to 1 in both (their exps are within a few ulps): s = 1 exactly and the
// key is 1 + b rounded, whatever the logit.
uint64_t keyId(std::span<const float> x, const Family& f, int32_t i) {
  const float b = f.bias.empty() ? 0.0f : f.bias[i];
  if (f.score == ScoreFunction::kSigmoid && x[i] >= 37.5f) return formOf(37.5f, b);
  return formOf(x[i], b);
}

// keyId of expert i, kept for the token once computed (rows of many equal keys ask for the
// same ones pair by pair). All ones is no identity: the bits of a NaN logit.
uint64_t keyIdOf(std::span<const float> x, const Family& f, Row& r, int32_t i) {
  constexpr uint64_t kNone = ~uint64_t{0};
  if (!r.idsKnown) {
    r.id.assign(x.size(), kNone);
    r.idsKnown = true;
  }
  if (r.id[i] == kNone) r.id[i] = keyId(x, f, i);
  return r.id[i];
}

// The key identities (keyId) that make group h's score, sorted, when every binary64
// evaluation picks keys of those identities: the members at the best (and second) key
// value of this level share one form each, every other member lies below them by more than
// both radii, and with one best and several second keys the best is above them the same
// way. Then two groups with the same identities have equal binary64 scores in both levels
// (and, with the same forms, equal real scores). Empty when that cannot be said.
std::vector<uint64_t> groupForms(std::span<const float> x, const Family& f, Row& r, int32_t h,
                                 int32_t size, bool top2, double best, double second) {
  int32_t nBest = 0, nSecond = 0;
  uint64_t fBest = 0, fSecond = 0;
  double inLo = kInf, outHi = -kInf, bestLo = kInf, secondHi = -kInf;
  for (int32_t i = h * size; i < (h + 1) * size; ++i) {
    const uint64_t form = keyIdOf(x, f, r, i);
    if (r.c[i] == best) {
      if (nBest++ > 0 && form != fBest) return {};
      fBest = form;
      bestLo = std::min(bestLo, r.c[i] - r.radius[i]);
    } else if (top2 && r.c[i] == second) {
      if (nSecond++ > 0 && form != fSecond) return {};
      fSecond = form;
      secondHi = std::max(secondHi, r.c[i] + r.radius[i]);
    } else {
      outHi = std::max(outHi, r.c[i] + r.radius[i]);
      continue;
    }
    inLo = std::min(inLo, r.c[i] - r.radius[i]);
  }
  if (nBest == 0 || !(outHi < inLo)) return {};
  if (!top2) return {fBest};
  if (nBest >= 2) return {fBest, fBest};
  if (nSecond == 0 || (nSecond >= 2 && !(bestLo > secondHi))) return {};
  return {std::min(fBest, fSecond), std::max(fBest, fSecond)};
}

// Group scores of a row (keptGroups) with their radii without gamma (tight), and the
// largest radius of each group's keys; m: the keys a score sums (1, or 2 for a top-2 sum).
struct GroupBands {
  std::span<const double> score, best, second, tight, keyRadius;
  double m;
};

// A lower bound of the ladder's gamma of group h: it is at least u |score| (each key's
// budget is at least u |c|: u p, u s or u |s + b|, and a top-2 sum takes the two largest
// budgets of the group) and 2^-148; half of it is taken, which covers its own roundings and
// the keys' distance to this level's.
double gammaLow(const GroupBands& g, int32_t h) {
  return 0.5 * kU32 * std::max(std::fabs(g.score[h]) - g.m * g.keyRadius[h], 0.0) + kTiny32;
}

// The ladder's binary64 score of group h (sigmoidGroupScore64) from the members that may be
// among its best: those not below the group's second key by both radii (the keys holding
// the best and second values lie above every other one in the ladder's binary64 too).
double ladderGroupScore(std::span<const float> x, const Family& f, const Row& r,
                        const GroupBands& g, int32_t h, int32_t size) {
  thread_local std::vector<int32_t> members;
  members.clear();
  const double floor = g.second[h] - g.keyRadius[h];
  for (int32_t i = h * size; i < (h + 1) * size; ++i) {
    if (!(r.c[i] + r.radius[i] < floor)) members.push_back(i);
  }
  return sigmoidGroupScore64(x, f, members, g.m == 2.0);
}

// Kept group q and left-out group h whose scores this level cannot order: neither can beat
// the other beyond the budget in any band the ladder draws (the ladder's gammas, at least
// gammaLow each, wider than their distance and both radii), and, for sigmoid scores, the
// ladder's own binary64 scores (ladderGroupScore, computed as it does) put q first: above
// h, or equal with q < h. Then the ladder counts h neither above q nor tied before it.
// score64: the ladder's group scores known so far (NaN: not yet).
bool nearTieHeld(std::span<const float> x, const Family& f, const Row& r, const GroupBands& g,
                 int32_t q, int32_t h, int32_t size, std::vector<double>& score64) {
  if (f.score != ScoreFunction::kSigmoid) return false;
  if (!(gammaLow(g, q) + gammaLow(g, h) >
        std::fabs(g.score[q] - g.score[h]) + g.tight[q] + g.tight[h])) {
    return false;
  }
  for (int32_t a : {q, h}) {
    if (std::isnan(score64[a])) score64[a] = ladderGroupScore(x, f, r, g, a, size);
  }
  return score64[q] > score64[h] || (score64[q] == score64[h] && q < h);
}

// The boundary between the topk_groups kept groups and the rest: the groups ordered by
// score, equal scores by index; every kept group q and left-out group h either apart by
// more than both radii without gamma (the ladder's binary64 scores then order them the same
// way, whatever their budgets), or q < h with the same key forms (equal real scores, equal
// binary64 scores in both levels) and the ladder's gammas wider than both radii, so that
// neither can beat the other beyond the budget in any band the ladder draws, or held as
// nearTieHeld says. Reorders `order` so that its first t are the kept groups.
bool tiedAtTheBoundary(std::span<const float> x, const Family& f, Row& r, const GroupBands& g,
                       int32_t t, int32_t size, bool top2, std::vector<int32_t>& order) {
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return g.score[a] > g.score[b] || (g.score[a] == g.score[b] && a < b);
  });
  const auto G = static_cast<int32_t>(order.size());
  thread_local std::vector<std::vector<uint64_t>> forms;
  thread_local std::vector<uint8_t> known;
  thread_local std::vector<double> score64;
  forms.resize(static_cast<size_t>(G));
  known.assign(static_cast<size_t>(G), 0);
  score64.assign(static_cast<size_t>(G), std::numeric_limits<double>::quiet_NaN());
  auto formsOf = [&](int32_t h) -> const std::vector<uint64_t>& {
    if (!known[h]) {
      forms[h] = groupForms(x, f, r, h, size, top2, g.best[h], g.second[h]);
      known[h] = 1;
    }
    return forms[h];
  };
  for (int32_t a = 0; a < t; ++a) {
    const int32_t q = order[a];
    for (int32_t b = t; b < G; ++b) {
      const int32_t h = order[b];
      if (g.score[q] - g.tight[q] > g.score[h] + g.tight[h]) continue;
      if (g.score[q] == g.score[h] && q < h &&
          gammaLow(g, q) + gammaLow(g, h) > g.tight[q] + g.tight[h]) {
        const auto& fq = formsOf(q);
        if (!fq.empty() && fq == formsOf(h)) continue;
      }
      if (!nearTieHeld(x, f, r, g, q, h, size, score64)) return false;
    }
  }
  return true;
}

// The groups the ladder ranks first: the topk_groups best by this level's group scores,
// apart from every other group by more than both groups' radii (the radius of a group
// score: its error here and twice the ladder's), or, at the boundary, tied exactly with a
// group of higher index that is left out (the same forms: the spec keeps the lower index,
// and both levels see the two scores equal), or held as nearTieHeld says. The ladder then
// finds no left-out group above a kept one and none that perhaps beats one beyond the
// budget, so every left-out group's experts are out of its comparisons; a kept group the
// router keeps no expert of may be in or out there (its budget decides), and its experts
// are held to the kept keys as eligible ones, which covers both. False when none of these
// holds or the router keeps an expert outside them; else `eligible` marks the experts of
// the kept groups.
bool keptGroups(std::span<const float> x, const Family& f, Row& r, std::span<const int32_t> S,
                std::vector<uint8_t>& eligible) {
  const auto E = static_cast<int32_t>(r.c.size());
  const int32_t G = f.groups, size = E / G;
  eligible.assign(static_cast<size_t>(E), 1);
  if (G <= 1 || f.topkGroups >= G) return true;
  const bool top2 = f.groupScore == GroupScoreFunction::kTop2Sum && size >= 2;
  const double m = top2 ? 2.0 : 1.0;
  thread_local std::vector<double> best, second, tight;
  thread_local std::vector<int32_t> order;
  std::vector<double>& score = r.gScore;
  for (auto* v : {&score, &best, &second, &tight, &r.gKeyRadius}) {
    v->resize(static_cast<size_t>(G));
  }
  r.gRadius.assign(static_cast<size_t>(G), std::numeric_limits<double>::quiet_NaN());
  order.resize(static_cast<size_t>(G));
  for (int32_t h = 0; h < G; ++h) {
    const auto at = static_cast<size_t>(h * size), n = static_cast<size_t>(size);
    const GroupTop top =
        groupTop(std::span(r.c).subspan(at, n), std::span(r.radius).subspan(at, n));
    const double radius = top.radius;
    r.gKeyRadius[h] = radius;
    score[h] = top2 ? top.best + top.second : top.best;
    best[h] = top.best;
    second[h] = top.second;
    // Without gamma: this level's error and twice the ladder's.
    tight[h] = (m * radius + std::fabs(score[h]) * 0x1p-48) * (1 + 0x1p-20);
    order[h] = h;
  }
  const int32_t t = f.topkGroups;
  std::nth_element(order.begin(), order.begin() + (t - 1), order.end(),
                   [&](int32_t a, int32_t b) { return score[a] > score[b]; });
  double keptLo = kInf, restHi = -kInf;
  for (int32_t q = 0; q < G; ++q) {
    const int32_t h = order[q];
    if (q < t) {
      keptLo = std::min(keptLo, score[h] - tight[h]);
    } else {
      restHi = std::max(restHi, score[h] + tight[h]);
    }
  }
  if (!(keptLo > restHi) &&
      !tiedAtTheBoundary(x, f, r, {score, best, second, tight, r.gKeyRadius, m}, t, size, top2,
                         order))
    return false;
  for (int32_t q = t; q < G; ++q) {
    const int32_t h = order[q];
    std::fill(eligible.begin() + h * size, eligible.begin() + (h + 1) * size, 0);
  }
  for (int32_t e : S) {
    if (!eligible[e]) return false;
  }
  return true;
}

// A lower bound of the ladder's lower budget end betaLo of key i: every key budget is at
// least u |c| (u p, 4u s, or u |s + b| with a bias) and 2^-148; half of it is taken, which
// covers its error term, its roundings and the key's distance to this level's.
double betaLow(const Row& r, int32_t i) {
  return 0.5 * kU32 * std::max(std::fabs(r.c[i]) - r.radius[i], 0.0) + kTiny32;
}

// Keys i and j with the same binary64 value in both levels (keyId) that the ladder cannot
// tell apart beyond the budget: its bands around them overlap by more than their widths.
// Equal key identities give equal keys here (the same operations on the same inputs, or
// both 1 + b), so unequal keys are told first, without the identities.
bool equalWithinBudget(std::span<const float> x, const Family& f, Row& r, int32_t i, int32_t j) {
  return r.c[i] == r.c[j] && keyIdOf(x, f, r, i) == keyIdOf(x, f, r, j) &&
         betaLow(r, i) + betaLow(r, j) > r.radius[i] + r.radius[j];
}

// An eligible displaced key j not below the kept ones by both radii: decided all the same
// when every kept key is either above it by both radii or has its binary64 value (keyId)
// with a different form, or the same form and a lower index (the ladder's exact tie goes
// to the lower index), the two within each other's budget: the ladder finds it neither
// above a kept key nor beyond a budget.
bool displacedHeld(std::span<const float> x, const Family& f, Row& r, std::span<const int32_t> S,
                   int32_t j) {
  const bool bias = !f.bias.empty();
  const uint64_t formJ = formOf(x[j], bias ? f.bias[j] : 0.0f);
  for (int32_t i : S) {
    if (r.c[i] - r.radius[i] > r.c[j] + r.radius[j]) continue;
    if (!equalWithinBudget(x, f, r, i, j)) return false;
    const bool sameForm = formOf(x[i], bias ? f.bias[i] : 0.0f) == formJ;
    if (sameForm && !(i < j)) return false;
  }
  return true;
}

// An upper bound of the ladder's binary32 budget of sigmoid key i: family_bands' keyBudget
// at the upper ends of s and |c| (the underflow step at the lower end of s), with the
// roundings of its bands.
double sigmoidKeyBudgetHigh(const Family& f, const Row& r, double cUlp, int32_t i) {
  const double sUp = r.s[i] + r.serr[i];
  const double ac = std::fabs(r.c[i]);
  const double cUp = ac + r.serr[i] + ac * 0x1p-53;
  const double beta =
      keyBudget(f, sUp, r.s[i] - r.serr[i], 0.0, cUp, static_cast<int32_t>(r.c.size()), cUlp);
  return beta * (1 + 0x1p-20) + 0x1p-1000;
}

// The radius of group h's score with its budget gamma (an upper bound of the ladder's: the
// group's largest key budget, twice for a top-2 sum with the sum's rounding): the ladder's
// bands around the score lie within it. Computed on first use.
double groupRadius(const Family& f, Row& r, double cUlp, int32_t h, int32_t size) {
  if (!std::isnan(r.gRadius[h])) return r.gRadius[h];
  const bool top2 = f.groupScore == GroupScoreFunction::kTop2Sum && size >= 2;
  const double m = top2 ? 2.0 : 1.0;
  double beta = 0;
  for (int32_t i = h * size; i < (h + 1) * size; ++i) {
    beta = std::max(beta, sigmoidKeyBudgetHigh(f, r, cUlp, i));
  }
  const double score = r.gScore[h], radius = r.gKeyRadius[h];
  double gamma = m * beta;
  if (top2) gamma += kU32 * (std::fabs(score) + m * radius) + kTiny32;
  r.gRadius[h] = (m * radius + gamma + std::fabs(score) * 0x1p-48) * (1 + 0x1p-20);
  return r.gRadius[h];
}

// Group a (sigmoid scores, one of the kept ones) beats every left-out group beyond the budget
// in every band the ladder draws: the ladder keeps it whatever the rounding (its state 2),
// so its experts are among the displaced eligible ones it compares.
bool surelyKept(const Family& f, Row& r, double cUlp, const std::vector<uint8_t>& eligible,
                int32_t a, int32_t size) {
  double lo = std::numeric_limits<double>::quiet_NaN();
  for (int32_t h = 0; h < f.groups; ++h) {
    if (eligible[h * size]) continue;
    if (std::isnan(lo)) lo = r.gScore[a] - groupRadius(f, r, cUlp, a, size);
    if (!(lo > r.gScore[h] + groupRadius(f, r, cUlp, h, size))) return false;
  }
  return true;
}

// How the selection's keys stand in the ladder: not known here, or every check passed with
// no near tie, or a near tie of keys (an eligible displaced key above the lowest kept key
// in the ladder's binary64, within the budget): the ladder's "near-tie-keys", or, with rank
// order, a slot's key below the next one's in the ladder's binary64, within the budget, and
// no near tie of keys: its "near-tie-order". kMaybeTie: a key that is a near tie if the
// ladder compares it, which its group's budget decides.
enum class Keys { kUnknown, kApart, kNearTie, kNearTieOrder, kMaybeTie };

// Keys i and j within each other's budget beyond their distance and both radii: the ladder
// finds neither beating the other beyond the budget, nor perhaps.
bool withinBudget(const Row& r, int32_t i, int32_t j) {
  return betaLow(r, i) + betaLow(r, j) > std::fabs(r.c[j] - r.c[i]) + r.radius[i] + r.radius[j];
}

// An eligible displaced key j that is neither below the kept keys by both radii nor held by
// a kept key's identity: for sigmoid scores, known when j is within the budget of every
// kept key (beyond their distance and both radii: the ladder finds it beating none beyond
// the budget, nor perhaps) and no kept key of j's form has a higher index (no exact tie owed
// to j). Then the ladder's own binary64 key of j (sigmoidKey64, computed as it does) against
// the ladder's lowest kept key says whether the ladder counts a near tie: not above it,
// none (kApart); above it, one (kNearTie) when the ladder surely compares j (its group is
// one the router keeps, or one it keeps whatever the rounding: surelyKept), else perhaps
// (kMaybeTie). keptMin64: that lowest kept key, computed on first use (NaN before).
Keys nearKey(std::span<const float> x, const Family& f, Row& r, std::span<const int32_t> S,
             int32_t j, bool routerGroup, const std::vector<uint8_t>& eligible, double cUlp,
             double& keptMin64) {
  if (f.score != ScoreFunction::kSigmoid) return Keys::kUnknown;
  const bool bias = !f.bias.empty();
  const uint64_t formJ = formOf(x[j], bias ? f.bias[j] : 0.0f);
  for (int32_t i : S) {
    if (!(r.c[i] - r.radius[i] > r.c[j] + r.radius[j]) && !withinBudget(r, i, j)) {
      return Keys::kUnknown;
    }
    if (i > j && formOf(x[i], bias ? f.bias[i] : 0.0f) == formJ) return Keys::kUnknown;
  }
  if (std::isnan(keptMin64)) {
    keptMin64 = kInf;
    for (int32_t i : S) keptMin64 = std::min(keptMin64, sigmoidKey64(x, f, i));
  }
  if (sigmoidKey64(x, f, j) <= keptMin64) return Keys::kApart;
  const int32_t size = static_cast<int32_t>(x.size()) / f.groups;
  if (routerGroup || surelyKept(f, r, cUlp, eligible, j / size, size)) return Keys::kNearTie;
  return Keys::kMaybeTie;
}

// Kept keys above every eligible displaced key by more than both radii (or held as
// displacedHeld says, or known as nearKey says); with rank order, each slot's key above the
// next one's the same way (or exactly equal keys in index order, or equal binary64 keys of
// different forms within each other's budget).
Keys keysApart(std::span<const float> x, const Family& f, Row& r, std::span<const int32_t> S,
               const std::vector<uint8_t>& eligible, bool rankOrder, double cUlp) {
  double keptLo = kInf;
  for (int32_t i : S) keptLo = std::min(keptLo, r.c[i] - r.radius[i]);
  const auto E = static_cast<int32_t>(x.size());
  const int32_t groups = f.groups, size = E / groups;
  // Every kept key is not below keptLo; so the eligible ones not below it (the kept groups,
  // each a run of experts, counted by a vector scan) must be the kept ones alone, or each
  // other one held or known.
  size_t notBelow = 0;
  for (int32_t h = 0; h < groups; ++h) {
    if (!eligible[h * size]) continue;
    const auto at = static_cast<size_t>(h * size), n = static_cast<size_t>(size);
    notBelow +=
        countNotBelow(std::span(r.c).subspan(at, n), std::span(r.radius).subspan(at, n), keptLo);
  }
  // A near tie the ladder surely counts makes the token's reason whatever the others are
  // (each within the budget: no violation, nothing undecided); without one, a key it
  // perhaps counts leaves the token to it.
  bool nearTie = false, maybeTie = false;
  if (notBelow != S.size()) {
    thread_local std::vector<uint8_t> kept, routerGroup;
    kept.assign(static_cast<size_t>(E), 0);
    routerGroup.assign(static_cast<size_t>(groups), 0);
    for (int32_t i : S) {
      kept[i] = 1;
      routerGroup[i / size] = 1;
    }
    double keptMin64 = std::numeric_limits<double>::quiet_NaN();
    for (int32_t j = 0; j < E; ++j) {
      if (!eligible[j] || kept[j] || r.c[j] + r.radius[j] < keptLo) continue;
      if (displacedHeld(x, f, r, S, j)) continue;
      const Keys k = nearKey(x, f, r, S, j, routerGroup[j / size] != 0, eligible, cUlp, keptMin64);
      if (k == Keys::kUnknown) return k;
      nearTie = nearTie || k == Keys::kNearTie;
      maybeTie = maybeTie || k == Keys::kMaybeTie;
    }
  }
  if (maybeTie && !nearTie) return Keys::kUnknown;
  const Keys result = nearTie ? Keys::kNearTie : Keys::kApart;
  if (!rankOrder) return result;
  // Slot order: a pair of consecutive slots within each other's budget is a near tie of the
  // order when the ladder's own binary64 keys (sigmoid scores) put the second above the
  // first; the first such pair gives the reason, unless a near tie of keys came before.
  const bool bias = !f.bias.empty();
  Keys order = Keys::kApart;
  for (size_t s = 0; s + 1 < S.size(); ++s) {
    const int32_t i = S[s], j = S[s + 1];
    // Keys apart (first: the common case) have different forms.
    if (r.c[i] - r.radius[i] > r.c[j] + r.radius[j]) continue;
    if (formOf(x[i], bias ? f.bias[i] : 0.0f) == formOf(x[j], bias ? f.bias[j] : 0.0f)) {
      if (j < i) return Keys::kUnknown;
      continue;
    }
    if (equalWithinBudget(x, f, r, i, j)) continue;
    if (f.score != ScoreFunction::kSigmoid || !withinBudget(r, i, j)) return Keys::kUnknown;
    if (sigmoidKey64(x, f, j) > sigmoidKey64(x, f, i)) order = Keys::kNearTieOrder;
  }
  return result == Keys::kApart ? order : result;
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
  if (f.score == ScoreFunction::kSoftmax) {
    for (int32_t e : S) {
      if (std::isfinite(r.t[e]) && r.s[e] > 0) weighted += r.s[e] / sumS * r.t[e];
    }
    weighted *= kSafety;
  }
  auto floorOf = [&](int32_t e, double aG) {
    if (!config.analyticFloor) return 0.0;
    const double sh = std::isfinite(r.t[e]) ? r.t[e] : 0.0;
    const bool tiny = (r.s[e] + r.serr[e]) * (1 + 0x1p-30) < 0x1p-125;
    return familyGateFloor(f, aG, sh, weighted, n, E, cUlp, aScale, sumHi, tiny);
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
  return (f.score == ScoreFunction::kSoftmax || f.score == ScoreFunction::kSigmoid) &&
         (f.groupScore == GroupScoreFunction::kMax ||
          f.groupScore == GroupScoreFunction::kTop2Sum) &&
         (f.renormalize == 0 || f.renormalize == 1) && f.groups >= 1 && E % f.groups == 0 &&
         f.topkGroups >= 1 && f.topkGroups <= f.groups && std::isfinite(f.scale) &&
         f.structShort == 0 && (f.bias.empty() || f.bias.size() == static_cast<size_t>(E));
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
  // Sigmoid scores are computed first: their pass finds a NaN logit too.
  thread_local Row r;
  const bool sigmoid = f.score == ScoreFunction::kSigmoid;
  const bool nan = sigmoid && scores(x, f, r);
  const bool real = !x.empty() && allFinite(f.bias) && (sigmoid ? !nan : scanRow(x).real);
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
  if (!sigmoid) scores(x, f, r);
  r.idsKnown = false;
  // The ladder excuses renormalised gates of scores below 2^-100 ("tiny-scores"): only
  // tokens clearly above that are decided here.
  double keptMax = 0;
  for (int32_t e : S) keptMax = std::max(keptMax, r.s[e] - r.serr[e]);
  if (f.renormalize == 1 && !(keptMax * kSafety > 0x1p-100)) return Decided::kNo;
  keys(f, r);
  if (!keptGroups(x, f, r, S, eligible)) return Decided::kNo;
  const Keys keys =
      keysApart(x, f, r, S, eligible, contract.slotOrder == SlotOrder::kRank, contract.expMaxUlp);
  if (keys == Keys::kUnknown) return Decided::kNo;
  if (!gatesWithin(f, r, S, gates.first(static_cast<size_t>(n)), contract, config)) {
    return Decided::kNo;
  }
  if (keys == Keys::kNearTie) return Decided::kNearTieKeys;
  return keys == Keys::kNearTieOrder ? Decided::kNearTieOrder : Decided::kExact;
}

}  // namespace moe::fuzz::first
