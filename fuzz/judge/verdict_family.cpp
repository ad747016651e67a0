// judgeFamilyToken: one token of a moe_route_v2 router against the routing family's spec
// (docs/fuzz.md, "The routing family": the checks, their order and the budgets' derivation),
// in stages as judgeToken: structure, groups, selection, gates. Selection is judged on the
// biased keys c = s + b and on the group scores, each within a budget derived from the
// binary32 evaluation; exactly equal keys or group scores (equal inputs) go to the lower
// index and are never excused; gates are checked against the UNBIASED scores of the
// router's own kept set, and a gate beyond its budget is named by the cause that explains
// it (the bias, the scale, the renormalisation). Each stage decides on the ladder of
// ladder.hpp: binary64 first, the oracle's MPFR enclosures where binary64 cannot.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "budget_formulas.hpp"
#include "family_bands.hpp"
#include "ladder.hpp"
#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/family.hpp"
#include "verdict_slots.hpp"

namespace moe::fuzz {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One token of a family router as the stages read it: the row and its family, the
// router's kept set S (its first n slots) and gates, and the binary64 row and groups.
struct FamilyToken {
  std::span<const float> x;
  const Family& f;
  int32_t k, E, n;
  std::span<const int32_t> S;
  std::span<const float> gates;
  const Contract& contract;
  const VerdictConfig& config;
  double cUlp;                              // the contract's exp error (ulp)
  bool lowest;                              // exact ties go to the lower index
  const std::vector<uint8_t>& inS;          // 1: the router keeps the expert
  const FamilyRow& r;                       // scores, keys and budgets in binary64
  const Groups* gr;                         // null: one group
  const std::vector<uint8_t>& routerGroup;  // 1: the router keeps an expert of the group
};

// The first reason a token is acceptable rather than exact is the one it reports.
void accept(Verdict& result, const char* reason) {
  if (result.outcome == Outcome::kExact) {
    result.outcome = Outcome::kAcceptable;
    result.reason = reason;
  }
}

std::string keyText(const FamilyToken& t, int32_t e) {
  const auto& x = t.x;
  const auto& f = t.f;
  return fmt::format(
      "expert {}: x = {} ({}){} s = {:.9g} key s + b = {:.9g}", e, decimal32(x[e]), hex32(x[e]),
      f.bias.empty() ? "" : fmt::format(" b = {} ({})", decimal32(f.bias[e]), hex32(f.bias[e])),
      t.r.s[e], t.r.c[e]);
}

// ---- Structure ----

// A row the spec is defined on: no NaN logit or bias, an infinite bias neither, and for
// softmax a row with a finite maximum (isRealRow).
bool isRealFamilyRow(std::span<const float> x, const Family& f) {
  bool real = !x.empty();
  for (float v : x) real = real && !std::isnan(v);
  if (isSoftmax(f) && !x.empty()) real = real && isRealRow(x);
  for (float b : f.bias) real = real && std::isfinite(b);
  return real;
}

// Renormalising scores that binary32 flushes to zero is 0/0: no gate is owed there.
bool noGateOwed(std::span<const int32_t> S, const Family& f, const FamilyRow& r) {
  double maxKeptS = 0;
  for (int32_t e : S) maxKeptS = std::max(maxKeptS, r.s[e]);
  return renormalises(f) && maxKeptS < 0x1p-100;
}

// Every kept gate is finite with the scale's sign (where a gate is owed).
std::optional<Verdict> checkGateSigns(std::span<const int32_t> S, std::span<const float> gates,
                                      const Family& f, bool noneOwed) {
  for (size_t s = 0; s < S.size(); ++s) {
    const float g = gates[s];
    const bool signOk = f.scale >= 0 ? !(g < 0.0f) : !(g > 0.0f);
    if (!noneOwed && !(std::isfinite(g) && signOk)) {
      return violation(ViolationKind::kGateNonfinite,
                       fmt::format("slot {} (expert {}) has gate {} ({}); the spec's gates are "
                                   "finite with the scale's sign on this row",
                                   s, S[s], decimal32(g), hex32(g)));
    }
  }
  return std::nullopt;
}

// ---- Groups ----

// The kept experts may lie in at most topk_groups groups: structure, no budget. Marks in
// routerGroup the groups the router keeps an expert of.
std::optional<Verdict> checkKeptGroups(std::span<const int32_t> S, const Family& f,
                                       const Groups& gr, std::vector<uint8_t>& routerGroup) {
  routerGroup.assign(static_cast<size_t>(gr.G), 0);
  int32_t spanned = 0;
  for (int32_t e : S) {
    const int32_t g = e / gr.size;
    spanned += routerGroup[g] ? 0 : 1;
    routerGroup[g] = 1;
  }
  if (spanned > f.topkGroups) {
    return violation(ViolationKind::kKeptGroup,
                     fmt::format("the kept experts lie in {} groups, but only topk_groups = {} "
                                 "groups are kept ({})",
                                 spanned, f.topkGroups, familyText(f)));
  }
  return std::nullopt;
}

// ---- Selection ----

// One pass of the selection's checks on bands B (binary64, then certified): what it found
// short of a violation, and its scratch (reused from token to token).
struct SelectionPass {
  bool undecided = false;            // some difference lies within B's width of its budget
  std::vector<const char*> accepts;  // the reasons the pass found
  // Per group: 0 not kept, 1 kept by the router, 2 kept by the spec whatever the rounding,
  // 3 perhaps that (B too wide to say): its experts count as displaced eligible ones only
  // for `undecided`.
  std::vector<uint8_t> groupState;
  std::vector<double> lLo, lHi, hLo, hHi, scoreSorted;  // the group bands' ends, sorted
  // Groups with an exact form, by form then index; per group, the groups of its form with
  // a lower index (tiedBefore), a higher one (tiedAfter), and where its form's run starts.
  std::vector<int32_t> byForm, tiedBefore, tiedAfter, runStart;
  std::vector<std::pair<uint64_t, int32_t>> keptForms;  // (form, index) of S, sorted
};

int32_t countAbove(const std::vector<double>& v, double t) {  // entries > t
  return static_cast<int32_t>(v.end() - std::upper_bound(v.begin(), v.end(), t));
}
int32_t countBelow(const std::vector<double>& v, double t) {  // entries < t
  return static_cast<int32_t>(std::lower_bound(v.begin(), v.end(), t) - v.begin());
}

// The group bands' ends sorted (h beats g beyond the budget when L_h > H_g: counted by
// binary search, O(G log G)), and the groups' exact ties (equal forms) tabulated.
void sortGroupBands(const Groups& gr, const SelectionBands& B, SelectionPass& p) {
  const auto G = static_cast<size_t>(gr.G);
  for (auto* v : {&p.lLo, &p.lHi, &p.hLo, &p.hHi}) v->resize(G);
  for (size_t h = 0; h < G; ++h) {
    p.lLo[h] = B.group[h].lLo;
    p.lHi[h] = B.group[h].lHi;
    p.hLo[h] = B.group[h].hLo;
    p.hHi[h] = B.group[h].hHi;
  }
  p.scoreSorted.assign(gr.score.begin(), gr.score.end());
  for (auto* v : {&p.lLo, &p.lHi, &p.hLo, &p.hHi, &p.scoreSorted}) std::sort(v->begin(), v->end());
  p.byForm.clear();
  for (int32_t h = 0; h < gr.G; ++h) {
    if (gr.form[h].exact) p.byForm.push_back(h);
  }
  std::sort(p.byForm.begin(), p.byForm.end(), [&](int32_t a, int32_t b) {
    return std::pair{gr.form[a].forms, a} < std::pair{gr.form[b].forms, b};
  });
  p.tiedBefore.assign(G, 0);
  p.tiedAfter.assign(G, 0);
  p.runStart.assign(G, 0);
  for (size_t a = 0; a < p.byForm.size();) {
    size_t b = a;
    while (b < p.byForm.size() && gr.form[p.byForm[b]] == gr.form[p.byForm[a]]) ++b;
    for (size_t q = a; q < b; ++q) {
      const int32_t h = p.byForm[q];
      p.tiedBefore[h] = static_cast<int32_t>(q - a);
      p.tiedAfter[h] = static_cast<int32_t>(b - 1 - q);
      p.runStart[h] = static_cast<int32_t>(a);
    }
    a = b;
  }
}

// A group the router keeps although topk_groups others beat it beyond the budget.
Verdict beatenGroup(const FamilyToken& t, const SelectionBands& B, int32_t g, int32_t beyond) {
  const Groups& gr = *t.gr;
  const Family& f = t.f;
  int32_t worst = -1;  // the weakest of the groups that beat g beyond the budget
  for (int32_t h = 0; h < gr.G; ++h) {
    if (B.group[h].lLo > B.group[g].hHi && (worst < 0 || gr.score[h] < gr.score[worst])) worst = h;
  }
  const double budget = B.groupGamma[worst] + B.groupGamma[g];
  return violation(ViolationKind::kKeptGroup,
                   fmt::format("group {} (score {:.9g}) is kept, but {} groups beat it beyond the "
                               "binary32 budget (topk_groups = {}); the weakest of them, group {}, "
                               "scores {:.9g}: a difference of {:.6g} > budget {:.6g} ({}, group "
                               "score {})",
                               g, gr.score[g], beyond, f.topkGroups, worst, gr.score[worst],
                               gr.score[worst] - gr.score[g], budget, familyText(f),
                               isTop2Sum(f) ? "the sum of the two best keys" : "the best key"),
                   budget > 0 ? (gr.score[worst] - gr.score[g]) / budget : kInf);
}

// A group the router keeps over lower-index groups with exactly its group score.
Verdict tiedGroup(const FamilyToken& t, const SelectionPass& p, int32_t g) {
  const int32_t tied = p.tiedBefore[g];
  std::string lower;  // the tied lower-index groups, by name (the report shows them)
  for (int32_t q = p.runStart[g]; q < p.runStart[g] + tied; ++q) {
    lower += fmt::format("{}group {}", lower.empty() ? "" : ", ", p.byForm[q]);
  }
  return violation(ViolationKind::kGroupTieOrder,
                   fmt::format("group {} is kept, but {} lower-index groups ({}) have "
                               "exactly the same group score {:.9g} (equal keys), and "
                               "with them topk_groups = {} or more groups rank above "
                               "it ({})",
                               g, tied, lower, t.gr->score[g], t.f.topkGroups, familyText(t.f)));
}

// Groups: no group the router keeps is beaten beyond the budget (or by an exact tie to the
// lower index) by topk_groups others; then the groups the spec keeps whatever the
// rounding, whose experts count as displaced eligible ones.
std::optional<Verdict> judgeGroups(const FamilyToken& t, const SelectionBands& B,
                                   SelectionPass& p) {
  const Groups& gr = *t.gr;
  const int32_t G = gr.G, topk = t.f.topkGroups;
  sortGroupBands(gr, B, p);
  for (int32_t g = 0; g < G; ++g) {
    if (p.groupState[g] != 1) continue;
    const int32_t beyond = countAbove(p.lLo, B.group[g].hHi);
    const int32_t maybe = countAbove(p.lHi, B.group[g].hLo);
    const int32_t tied = p.tiedBefore[g];
    if (beyond >= topk) return beatenGroup(t, B, g, beyond);
    if (beyond + tied >= topk) {
      if (t.lowest) return tiedGroup(t, p, g);
      p.accepts.push_back("tie-order");
      continue;
    }
    if (maybe + tied >= topk) p.undecided = true;
    if (countAbove(p.scoreSorted, gr.score[g]) >= topk) p.accepts.push_back("near-tie-groups");
  }
  // Groups the spec keeps whatever the rounding: g beats beyond the budget (or by an exact
  // tie to the lower index) all but fewer than topk_groups others.
  for (int32_t g = 0; g < G; ++g) {
    if (p.groupState[g]) continue;
    const int32_t tail = t.lowest ? p.tiedAfter[g] : 0;
    const int32_t notBeatenSure = (G - 1) - countBelow(p.hHi, B.group[g].lLo) - tail;
    const int32_t notBeatenMaybe = (G - 1) - countBelow(p.hLo, B.group[g].lHi) - tail;
    if (notBeatenSure < topk) {
      p.groupState[g] = 2;
    } else if (notBeatenMaybe < topk) {
      p.groupState[g] = 3;
    }
  }
  return std::nullopt;
}

// The state of an expert's group (1 without groups: every expert is eligible).
uint8_t groupStateOf(const FamilyToken& t, const SelectionPass& p, int32_t e) {
  return t.gr ? p.groupState[e / t.gr->size] : uint8_t{1};
}

// An eligible expert the router displaced, in a group the router or surely the spec keeps.
bool displacedEligible(const FamilyToken& t, const SelectionPass& p, int32_t j) {
  const uint8_t st = groupStateOf(t, p, j);
  return !t.inS[j] && (st == 1 || st == 2);
}

// Keys: no eligible displaced expert beats a kept one beyond the budget, that is
// max L_j <= min H_i (verdict_token.cpp).
std::optional<Verdict> judgeKeys(const FamilyToken& t, const SelectionBands& B, SelectionPass& p) {
  const FamilyRow& r = t.r;
  const Family& f = t.f;
  int32_t iStar = -1, jStar = -1;
  double minHhi = kInf, minHlo = kInf, maxLlo = -kInf, maxLhi = -kInf;
  for (int32_t i : t.S) {
    if (B.key[i].hHi < minHhi) minHhi = B.key[i].hHi, iStar = i;
    minHlo = std::min(minHlo, B.key[i].hLo);
  }
  for (int32_t j = 0; j < t.E; ++j) {
    const uint8_t st = groupStateOf(t, p, j);
    if (t.inS[j] || st == 0) continue;
    maxLhi = std::max(maxLhi, B.key[j].lHi);
    if (st != 3 && B.key[j].lLo > maxLlo) maxLlo = B.key[j].lLo, jStar = j;
  }
  if (jStar >= 0 && maxLlo > minHhi) {
    const double budget = r.beta[iStar] + r.beta[jStar];
    // biased-key names the bias: only when the two experts' biases differ, so that the
    // bias is part of what decides between them; else the scores alone do (beaten-kept).
    const bool biasDecides = !f.bias.empty() && f.bias[jStar] != f.bias[iStar];
    return violation(biasDecides ? ViolationKind::kBiasedKey : ViolationKind::kBeatenKept,
                     fmt::format("selection: eligible displaced {} beats kept {} by {:.6g} on "
                                 "the {}, beyond the binary32 budget {:.6g} ({})",
                                 keyText(t, jStar), keyText(t, iStar), r.c[jStar] - r.c[iStar],
                                 biasDecides ? "biased keys" : "keys (equal biases or none)",
                                 budget, familyText(f)),
                     budget > 0 ? (r.c[jStar] - r.c[iStar]) / budget : kInf);
  }
  if (maxLhi > minHlo) p.undecided = true;
  double minC = kInf, maxC = -kInf;
  for (int32_t i : t.S) minC = std::min(minC, r.c[i]);
  for (int32_t j = 0; j < t.E; ++j) {
    if (displacedEligible(t, p, j)) maxC = std::max(maxC, r.c[j]);
  }
  if (maxC > minC) p.accepts.push_back("near-tie-keys");
  return std::nullopt;
}

// Exactly equal keys (equal logit and bias) go to the lower index: a displaced eligible j
// with the form of a kept i > j.
std::optional<Verdict> judgeExactTies(const FamilyToken& t, SelectionPass& p) {
  p.keptForms.clear();
  for (int32_t i : t.S) p.keptForms.emplace_back(t.r.form[i], i);
  std::sort(p.keptForms.begin(), p.keptForms.end());
  for (int32_t j = 0; j < t.E; ++j) {
    if (!displacedEligible(t, p, j)) continue;
    // The highest kept index with j's form: the last of its run.
    const auto at = std::upper_bound(p.keptForms.begin(), p.keptForms.end(),
                                     std::pair{t.r.form[j], std::numeric_limits<int32_t>::max()});
    if (at == p.keptForms.begin() || (at - 1)->first != t.r.form[j] || (at - 1)->second < j) {
      continue;
    }
    if (!t.lowest) {
      p.accepts.push_back("tie-order");
      continue;
    }
    const int32_t i = (at - 1)->second;
    return violation(ViolationKind::kTieHigherIndex,
                     fmt::format("selection: experts {} and {} have exactly equal keys (equal "
                                 "logits and biases); expert {} (the lower index) must be kept "
                                 "before expert {} ({}, {})",
                                 j, i, j, i, keyText(t, j), keyText(t, i)));
  }
  return std::nullopt;
}

// Slot order on the keys: no slot beaten beyond the budget by the next one; exactly equal
// keys, the lower index first.
std::optional<Verdict> judgeSlotOrder(const FamilyToken& t, const SelectionBands& B,
                                      SelectionPass& p) {
  const FamilyRow& r = t.r;
  for (int32_t s = 0; s + 1 < t.n; ++s) {
    const int32_t i = t.S[s], j = t.S[s + 1];
    if (r.form[i] == r.form[j]) {
      if (j < i) {
        if (!t.lowest) {
          p.accepts.push_back("tie-order");
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
                                   keyText(t, j), s + 1, keyText(t, i), s, r.c[j] - r.c[i], budget),
                       budget > 0 ? (r.c[j] - r.c[i]) / budget : kInf);
    }
    if (B.key[j].lHi > B.key[i].hLo) p.undecided = true;
    if (r.c[j] > r.c[i]) p.accepts.push_back("near-tie-order");
  }
  return std::nullopt;
}

// One pass of the selection's checks on bands B: a violation sure on B, or none, with
// p.undecided and p.accepts saying what else the pass found.
std::optional<Verdict> selectionPass(const FamilyToken& t, const SelectionBands& B,
                                     SelectionPass& p) {
  p.undecided = false;
  p.accepts.clear();
  p.groupState.assign(t.routerGroup.begin(), t.routerGroup.end());
  if (t.gr) {
    if (auto v = judgeGroups(t, B, p)) return v;
  }
  if (auto v = judgeKeys(t, B, p)) return v;
  if (auto v = judgeExactTies(t, p)) return v;
  if (t.contract.slotOrder == SlotOrder::kRank) return judgeSlotOrder(t, B, p);
  return std::nullopt;
}

// The oracle's certified decision agrees with the router: exactly the real-number spec's
// kept experts (in its order, where the contract ranks the slots). Throws where the oracle
// abstains.
bool certifiedSameSelection(const FamilyToken& t) {
  const auto p = familyRouteParams(t.f, t.k);
  const auto decision = oracle::certified::routeDecisionEnclosure(p, t.x);
  bool same = decision.decided && decision.keptExperts.size() == t.S.size();
  if (same && t.contract.slotOrder == SlotOrder::kRank) {
    same = std::equal(t.S.begin(), t.S.end(), decision.keptExperts.begin(),
                      [](int32_t a, size_t b) { return static_cast<size_t>(a) == b; });
  } else if (same) {
    for (int32_t e : t.S) same = same && decision.kept[static_cast<size_t>(e)];
  }
  return same;
}

// The certified level of the selection: the oracle's decision, then the certified bands
// relative to the router's weakest kept key and group score (the kept boundary).
std::optional<Verdict> certifiedSelection(const FamilyToken& t, SelectionPass& p) {
  if (certifiedSameSelection(t)) {
    p.undecided = false;
    return std::nullopt;
  }
  double refKey = kInf, refGroup = kInf;
  for (int32_t e : t.S) refKey = std::min(refKey, t.r.c[e]);
  for (int32_t g = 0; t.gr && g < t.gr->G; ++g) {
    if (t.routerGroup[g] == 1) refGroup = std::min(refGroup, t.gr->score[g]);
  }
  thread_local SelectionBands cb;
  certifiedBands(t.x, t.f, t.k, t.r, t.gr, t.cUlp, std::isfinite(refKey) ? refKey : 0.0,
                 std::isfinite(refGroup) ? refGroup : 0.0, cb);
  return selectionPass(t, cb, p);
}

// Selection: the binary64 filter decides almost every token; what it cannot place against
// its budget goes to the oracle: first its certified decision (a router that kept exactly
// the real-number spec's experts, in its order, owes nothing), then the certified bands.
// Counted once per token, at the level that decided; the reasons found make the token
// acceptable.
std::optional<Verdict> judgeSelection(const FamilyToken& t, LevelCounters& levels,
                                      Verdict& result) {
  thread_local SelectionBands bands;
  thread_local SelectionPass p;
  doubleBands(t.r, t.gr, t.f, bands);
  if (auto v = selectionPass(t, bands, p)) {
    ++levels.selectionDouble;
    return v;
  }
  if (!p.undecided) {
    ++levels.selectionDouble;
  } else {
    try {
      if (auto v = certifiedSelection(t, p)) {
        ++levels.selectionCertified;
        v->certificate += " [certified: MPFR enclosures of the scores and group scores]";
        return v;
      }
    } catch (const std::exception&) {
      p.undecided = true;  // the oracle abstained (too close past its precision cap)
    }
    ++(p.undecided ? levels.selectionUndecided : levels.selectionCertified);
  }
  for (const char* a : p.accepts) accept(result, a);
  return std::nullopt;
}

// ---- Gates ----

// The router's kept set's exact gates in binary64 and what their budget is made of, with
// the binary32 spec's gates and the oracle's enclosures computed when first needed.
struct KeptGates {
  double sumS = 0, sumSErr = 0;  // the kept scores' sum and its error
  double weighted = 0;           // softmax: the kept set's weighted shift (gateFloor's mean)
  double F = 0, U = 0;           // the budget's spec32 factor and ulps
  std::optional<std::vector<float>> g32;
  std::optional<std::vector<oracle::certified::Certified>> exact;
};

KeptGates keptGatesOf(const FamilyToken& t) {
  const FamilyRow& r = t.r;
  KeptGates kg;
  for (int32_t e : t.S) kg.sumS += r.s[e], kg.sumSErr += r.serr[e];
  kg.sumSErr += t.n * 0x1p-53 * kg.sumS;
  if (isSoftmax(t.f)) {
    for (int32_t e : t.S) {
      if (std::isfinite(r.shift[e]) && r.s[e] > 0) kg.weighted += r.s[e] / kg.sumS * r.shift[e];
    }
  }
  kg.F = t.config.gateFactor.value_or(t.contract.gateBudget.spec32Factor);
  kg.U = t.config.gateUlp.value_or(t.contract.gateBudget.ulp);
  return kg;
}

// The binary32 spec's formula on S: scoresSpec<float>, the sum over S in index order.
const std::vector<float>& spec32Gates(const FamilyToken& t, KeptGates& kg) {
  if (!kg.g32) {
    const auto s32 = oracle::scoresSpec(
        isSoftmax(t.f) ? oracle::ScoreFn::softmax : oracle::ScoreFn::sigmoid, t.x);
    std::vector<int32_t> byIndex(t.S.begin(), t.S.end());
    std::sort(byIndex.begin(), byIndex.end());
    float total = 0.0f;
    for (int32_t j : byIndex) total += s32[j];
    kg.g32.emplace();
    for (int32_t e : t.S) {
      kg.g32->push_back((renormalises(t.f) ? s32[e] / total : s32[e]) * t.f.scale);
    }
  }
  return *kg.g32;
}

// The analytic floor of expert e's gate budget at |gate| = G (docs/fuzz.md).
double gateFloorOf(const FamilyToken& t, const KeptGates& kg, int32_t e, double G) {
  if (!t.config.analyticFloor) return 0.0;
  const FamilyRow& r = t.r;
  const double sh = std::isfinite(r.shift[e]) ? r.shift[e] : 0.0;
  return familyGateFloor(t.f, std::fabs(G), sh, kg.weighted, t.n, t.E, t.cUlp,
                         std::fabs(double{t.f.scale}), kg.sumS, r.s[e] < 0x1p-125);
}

// Slot s's exact gate in binary64, enclosed: [lo, hi].
std::pair<double, double> binary64Gate(const FamilyToken& t, const KeptGates& kg, int32_t e) {
  const FamilyRow& r = t.r;
  const double scale = t.f.scale;
  double G, err;
  if (renormalises(t.f)) {
    G = r.s[e] / kg.sumS * scale;
    err = std::fabs(G) * (r.serr[e] / std::max(r.s[e], 1e-300) + kg.sumSErr / kg.sumS + 0x1p-51) +
          kAbsNormal;
    if (r.s[e] == 0) err = std::fabs(scale) * r.serr[e] / kg.sumS + kAbsNormal;
  } else {
    G = r.s[e] * scale;
    err = std::fabs(scale) * r.serr[e] + std::fabs(G) * 0x1p-52 + kAbsNormal;
  }
  return {G - err, G + err};
}

// Slot s's gate against its budget, the exact gate in [lo, hi]: within, beyond, or
// undecided. devLo and bHi are the least deviation and the largest budget, for a report.
Decision decideGate(const FamilyToken& t, KeptGates& kg, int32_t s, double lo, double hi,
                    double& devLo, double& bHi) {
  const int32_t e = t.S[s];
  const double g = t.gates[s];
  const double devHi = std::max(std::fabs(g - lo), std::fabs(g - hi));
  devLo = (g >= lo && g <= hi) ? 0.0 : std::min(std::fabs(g - lo), std::fabs(g - hi));
  const double aLo = (lo <= 0 && hi >= 0) ? 0.0 : std::min(std::fabs(lo), std::fabs(hi));
  const double aHi = std::max(std::fabs(lo), std::fabs(hi));
  double bLo = kg.U * ulp32(aLo) + gateFloorOf(t, kg, e, aLo);
  bHi = kg.U * ulp32(aHi) + gateFloorOf(t, kg, e, aHi);
  if (devHi <= bLo) return Decision::kWithin;
  const double q = spec32Gates(t, kg)[static_cast<size_t>(s)];
  const double tHi = std::max(std::fabs(q - lo), std::fabs(q - hi));
  const double tLo = (q >= lo && q <= hi) ? 0.0 : std::min(std::fabs(q - lo), std::fabs(q - hi));
  bLo += kg.F * tLo;
  bHi += kg.F * tHi;
  if (devHi <= bLo) return Decision::kWithin;
  if (devLo > bHi) return Decision::kBeyond;
  return Decision::kUndecided;
}

// Slot s's gate on the ladder: binary64, then the oracle's enclosure of the kept set's
// gates. [gLo, gHi] ends as the enclosure that decided.
Decision placeGate(const FamilyToken& t, KeptGates& kg, int32_t s, double& gLo, double& gHi,
                   double& devLo, double& bHi, LevelCounters& levels) {
  std::tie(gLo, gHi) = binary64Gate(t, kg, t.S[s]);
  Decision d = decideGate(t, kg, s, gLo, gHi, devLo, bHi);
  if (d != Decision::kUndecided) {
    ++levels.gateDouble;
    return d;
  }
  try {
    if (!kg.exact) {
      const auto p = familyRouteParams(t.f, t.k);
      std::vector<size_t> kept(t.S.begin(), t.S.end());
      kg.exact = oracle::certified::routeKeptGatesEnclosure(p, t.x, kept);
    }
    gLo = (*kg.exact)[static_cast<size_t>(s)].range.lowerDouble();
    gHi = (*kg.exact)[static_cast<size_t>(s)].range.upperDouble();
    d = decideGate(t, kg, s, gLo, gHi, devLo, bHi);
  } catch (const std::exception&) {
    d = Decision::kUndecided;
  }
  ++(d == Decision::kUndecided ? levels.gateUndecided : levels.gateCertified);
  return d;
}

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

// The gates of S by a formula: each kept expert's weight (its score s, or its biased key
// c), divided by their total (over S, or `total` when >= 0) when renorm, times factor.
std::vector<double> gatesBy(const FamilyToken& t, bool biased, bool renorm, double factor,
                            double total) {
  auto weight = [&](int32_t j) { return biased ? t.r.c[j] : t.r.s[j]; };
  std::vector<double> out;
  if (total < 0) {
    total = 0;
    for (int32_t e : t.S) total += weight(e);
  }
  for (int32_t s = 0; s < t.n; ++s) {
    const double w = weight(t.S[s]);
    out.push_back((renorm ? w / total : w) * factor);
  }
  return out;
}

// A gate beyond its budget, and what explains it.
struct GateCause {
  ViolationKind kind = ViolationKind::kGateError;
  std::string cause, hypothesis;
};

// Name a cause only when one formula explains every slot of the token and the case can
// tell it from the spec's own gates (a bias of zeros, a scale of 1, a renormalisation by a
// sum of 1 cannot); else gate-error, with the pattern measured. judgeCase confirms a named
// cause by a rerun where the router is at hand.
GateCause nameGateCause(const FamilyToken& t, double sumS) {
  const Family& f = t.f;
  const double scale = f.scale;
  const bool renorm = renormalises(f);
  auto fits = [](double g, double alt) {
    return std::fabs(g - alt) <= 64 * kU32 * std::fabs(alt) + 0x1p-140;
  };
  const std::vector<double> spec = gatesBy(t, false, renorm, scale, -1);
  // The hypothesis explains every slot and differs from the spec's gates somewhere.
  auto explains = [&](const std::vector<double>& alt) {
    bool differs = false;
    for (int32_t s = 0; s < t.n; ++s) {
      if (!fits(t.gates[s], alt[s])) return false;
      differs = differs || !fits(spec[s], alt[s]);
    }
    return differs;
  };
  bool biasNonZero = false;
  for (int32_t e : t.S) biasNonZero = biasNonZero || (!f.bias.empty() && f.bias[e] != 0.0f);
  GateCause c;
  if (biasNonZero && (explains(gatesBy(t, true, renorm, scale, -1)) ||
                      explains(gatesBy(t, true, !renorm, scale, -1)))) {
    c = {ViolationKind::kGateBias, "the gates are the biased keys s + b, not the scores s", "bias"};
  } else if (scale != 1.0 && (explains(gatesBy(t, false, renorm, 1.0, -1)) ||
                              explains(gatesBy(t, false, renorm, scale * scale, -1)))) {
    c = {ViolationKind::kGateScale,
         renorm ? "the scale is missing (scaled before renormalising, where it cancels?)"
                : "the scale is missing or applied twice",
         "scale"};
  } else if (explains(gatesBy(t, false, !renorm, scale, -1))) {
    c = {ViolationKind::kGateRenorm,
         renorm ? "the gates are not renormalised" : "the gates are renormalised", "renorm-flag"};
  } else if (renorm) {
    // Renormalised over another set the router has at hand: its eligible experts (the
    // groups it kept) or all of them.
    double eligibleSum = 0, allSum = 0;
    for (int32_t j = 0; j < t.E; ++j) {
      allSum += t.r.s[j];
      if (!t.gr || t.routerGroup[static_cast<size_t>(j / t.gr->size)]) eligibleSum += t.r.s[j];
    }
    for (const auto& [total, set] :
         {std::pair{eligibleSum, "its eligible experts"}, std::pair{allSum, "all the experts"}}) {
      if (explains(gatesBy(t, false, true, scale, total))) {
        c = {ViolationKind::kGateRenorm,
             fmt::format("renormalised over {} (their scores sum to {:.9g}), not over the "
                         "kept experts (theirs sum to {:.9g})",
                         set, total, sumS),
             "renorm-set"};
        break;
      }
    }
  }
  if (c.kind == ViolationKind::kGateError) {
    c.cause = gatePattern(t.gates.first(static_cast<size_t>(t.n)), spec, scale, renorm);
  }
  return c;
}

// Slot s's gate beyond its budget: the certificate, the margin, and the cause named.
Verdict gateViolation(const FamilyToken& t, const KeptGates& kg, int32_t s, double gLo, double gHi,
                      double devLo, double bHi) {
  const GateCause c = nameGateCause(t, kg.sumS);
  const float gate = t.gates[s];
  Verdict v = violation(
      c.kind,
      fmt::format("slot {} (expert {}): gate {} ({}) but the exact gate of the router's kept set "
                  "(unbiased scores{}, scale {}) is in [{:.17g}, {:.17g}]; |g - exact| >= {:.6g} > "
                  "budget {:.6g} (spec32 gate {:.9g}, factor {}, {} ulp, floor {}){}",
                  s, t.S[s], decimal32(gate), hex32(gate),
                  renormalises(t.f) ? ", renormalised over S" : "", decimal32(t.f.scale), gLo, gHi,
                  devLo, bHi, kg.g32 ? (*kg.g32)[static_cast<size_t>(s)] : std::nan(""), kg.F, kg.U,
                  t.config.analyticFloor ? "on" : "off", c.cause.empty() ? "" : "; " + c.cause),
      bHi > 0 ? devLo / bHi : kInf);
  v.cause = c.hypothesis;
  if (!c.hypothesis.empty()) v.causeText = c.cause;
  return v;
}

// Gates: each of the router's kept set's gates against the exact gate of that set, on the
// UNBIASED scores, within its budget.
std::optional<Verdict> judgeGates(const FamilyToken& t, LevelCounters& levels) {
  KeptGates kg = keptGatesOf(t);
  if (renormalises(t.f) && !(kg.sumS > 0)) return std::nullopt;  // 0/0: not real
  for (int32_t s = 0; s < t.n; ++s) {
    double gLo = 0, gHi = 0, devLo = 0, bHi = 0;
    if (placeGate(t, kg, s, gLo, gHi, devLo, bHi, levels) == Decision::kBeyond) {
      return gateViolation(t, kg, s, gLo, gHi, devLo, bHi);
    }
  }
  return std::nullopt;
}

}  // namespace

Verdict judgeFamilyToken(std::span<const float> x, const Family& f, int32_t k,
                         std::span<const int32_t> ids, std::span<const float> gates,
                         const Contract& contract, const VerdictConfig& config,
                         LevelCounters& levels) {
  // Reused from token to token: one token is judged per call, thousands a second.
  thread_local std::vector<uint8_t> inS, routerGroup;
  thread_local FamilyRow r;
  thread_local Groups groups;
  const auto E = static_cast<int32_t>(x.size());
  const int32_t n = std::min(k, familyEligible(f, E));
  const bool real = isRealFamilyRow(x, f);

  // Structure: n = min(k, eligible) distinct ids in range, then empty slots; finite gates.
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
  evaluateRow(x, f, contract.expMaxUlp, r);
  const bool noneOwed = noGateOwed(S, f, r);
  if (auto v = checkGateSigns(S, gates, f, noneOwed)) return *v;

  // Groups: the kept experts lie in at most topk_groups of them.
  routerGroup.clear();
  const Groups* gr = nullptr;
  if (f.groups > 1) {
    groupsOf(r, f, E, groups);
    gr = &groups;
    if (auto v = checkKeptGroups(S, f, groups, routerGroup)) return *v;
  }
  const FamilyToken t{x,
                      f,
                      k,
                      E,
                      n,
                      S,
                      gates,
                      contract,
                      config,
                      contract.expMaxUlp,
                      config.tieOrder.value_or(contract.tieOrder) == TieOrder::kLowestIndex,
                      inS,
                      r,
                      gr,
                      routerGroup};

  // Selection, then the gates of the router's own kept set against the unbiased scores.
  Verdict result;
  if (auto v = judgeSelection(t, levels, result)) return *v;
  if (noneOwed) {
    accept(result, "tiny-scores");
    return result;
  }
  if (auto v = judgeGates(t, levels)) return *v;
  return result;
}

}  // namespace moe::fuzz
