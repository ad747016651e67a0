#pragma once
// The routing family of today's open MoE models: softmax or sigmoid scores, an
// optional per-expert selection bias, group-limited top-k, renormalisation and a scale.
// One function per definition of lean-traces/Spec.lean (namespaces Activation and
// Spec.MoE), with the same names and the same order of operations, so that evaluated in
// binary32 with Lean's exps they reproduce Lean bit for bit. "serves" names the Lean
// theorem (routeGatesWith_eq_gatesVecSpecWith, routeGates_eq_gatesVecSpec, routeKeptIn_one_group)
// or the property test of tests/oracle/family_properties_test.cpp the definition is checked by.
//
// Which model uses which parameters (docs/oracle.md, The routing family):
//   Mixtral, GPT-OSS, Qwen3   softmax, no bias, G = 1, renormalise, scale 1
//   Qwen1.5/Qwen2-MoE         softmax, no bias, G = 1, raw probabilities
//   DeepSeek-V2               softmax, no bias, G groups by max, top topk_group, raw, scale
//   DeepSeek-V3/R1            sigmoid, bias, G = 8 top 4 by top-2 sum, renormalise, 2.5
//   Kimi K2, GLM-4.5          sigmoid, bias, G = 1, renormalise, scale
//   Llama 4                   sigmoid, no bias, G = 1, k = 1, raw, scale 1
//
// As in routing.hpp, the literal transliterations (routeRank, routeKept,
// routeKeptExpertsLiteral, routeKeptMaskLiteral) are total: they never throw on NaN, they
// compare. The fast entry points (routeRanks, routeKeptExperts, routeKeptMask) sort in
// O(E log E) and reject NaN keys with a SpecError, because a sort by a comparator that is
// not a strict weak order is undefined behaviour. The composite definitions (groupScores,
// keptGroups, routeGates...) take the fast path when no key is NaN and the literal one
// otherwise, so they are total and fast. Like Lean, every definition is total in the
// parameters too: outside paramsValid it still gives Lean's value (G = 0 puts every expert
// in group 0, a short bias reads zeros past its end); paramsInvalidReason says which rule
// fails, for callers (the C ABI, the certified enclosures) that refuse such parameters.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "moe/oracle/context.hpp"
#include "moe/oracle/error.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"

namespace moe::oracle {

// Lean: Spec.MoE.sumSpec — serves gatesVecSpec_simplex, RenormalisedGatesSumToTheScale
// Left fold of add seeded with zero, in index order: ((0 + v0) + v1) + ...
template <class A>
A sumSpec(std::span<const A> v) {
  A total = Context<A>::zero();
  for (const A& x : v) total = Context<A>::add(total, x);
  return total;
}

// Lean: Activation.sigmoidSpecWith — serves the Lean replay (sigmoid with Lean's exps)
// 1 / (1 + exp(0 - x)): one subtraction, one exp, one add, one division, in that order.
template <class A, class ExpFn>
A sigmoidSpecWith(const A& x, ExpFn&& expFn) {
  using C = Context<A>;
  return C::div(C::one(), C::add(C::one(), expFn(C::sub(C::zero(), x))));
}

// Lean: Activation.sigmoidSpec — serves SigmoidAndSoftmaxKeepTheSameExperts (monotone)
template <HasExp A>
A sigmoidSpec(const A& x) {
  return sigmoidSpecWith(x, [](const A& v) { return Context<A>::exp(v); });
}

// Lean: Spec.MoE.ScoreFn — serves routeGatesWith_eq_gatesVecSpecWith (which score function)
enum class ScoreFn { softmax, sigmoid };

// Lean: Spec.MoE.GroupScore — serves keptGroups (how a group is scored)
enum class GroupScore { max, top2Sum };

// Lean: Spec.MoE.RouteParams — serves paramsValid and every route* definition
// bias: E values, or empty for none (then the keys are the scores exactly, no addition).
// groups: G, 1 = no grouping (groupScore then ignored). scale: the routed scaling factor.
template <class A>
struct RouteParams {
  std::size_t k = 0;
  ScoreFn score = ScoreFn::softmax;
  std::span<const A> bias{};
  std::size_t groups = 1;
  std::size_t topkGroups = 1;
  GroupScore groupScore = GroupScore::max;
  bool renormalize = true;
  A scale = A(1);
};

// Which rule of paramsValid fails for E experts, or the empty string when none does.
template <class A>
std::string paramsInvalidReason(std::size_t E, const RouteParams<A>& p) {
  const auto n = [](std::size_t v) { return std::to_string(v); };
  if (!p.bias.empty() && p.bias.size() != E) {
    return "bias has " + n(p.bias.size()) + " values for " + n(E) + " experts";
  }
  if (p.groups < 1) return "groups is 0 (at least 1; 1 = no grouping)";
  if (E % p.groups != 0) return "groups " + n(p.groups) + " does not divide " + n(E) + " experts";
  if (p.topkGroups < 1 || p.topkGroups > p.groups) {
    return "topkGroups " + n(p.topkGroups) + " outside 1.." + n(p.groups);
  }
  if (p.groupScore == GroupScore::top2Sum && p.groups > 1 && E / p.groups < 2) {
    return "top2Sum needs groups of at least 2 experts, groups of " + n(E / p.groups) + " given";
  }
  return "";
}

// Lean: Spec.MoE.paramsValid — serves the domain of every family property (ParamsValidDomain)
// bias absent or of length E; G >= 1 divides E (E = 0: any G >= 1); 1 <= topkGroups <= G;
// with top2Sum and G > 1 every group has at least 2 experts.
template <class A>
bool paramsValid(std::size_t E, const RouteParams<A>& p) {
  return paramsInvalidReason(E, p).empty();
}

// Throws SpecError("<what>: invalid routing parameters: <rule>") outside paramsValid.
template <class A>
void requireParamsValid(const char* what, std::size_t E, const RouteParams<A>& p) {
  const std::string why = paramsInvalidReason(E, p);
  if (!why.empty()) throw SpecError(std::string(what) + ": invalid routing parameters: " + why);
}

// Lean: Spec.MoE.scoresSpecWith — serves the Lean replay (scores with Lean's exps)
// softmaxVecSpecWith of the logits, or sigmoidSpecWith of each logit.
template <class A, class ExpFn>
std::vector<A> scoresSpecWith(ScoreFn score, std::span<const A> logits, ExpFn&& expFn) {
  if (score == ScoreFn::softmax) return softmaxVecSpecWith(logits, expFn);
  std::vector<A> s;
  s.reserve(logits.size());
  for (const A& x : logits) s.push_back(sigmoidSpecWith(x, expFn));
  return s;
}

// Lean: Spec.MoE.scoresSpec — serves routeGatesWith_eq_gatesVecSpecWith, SigmoidAndSoftmaxKeep...
template <HasExp A>
std::vector<A> scoresSpec(ScoreFn score, std::span<const A> logits) {
  return scoresSpecWith(score, logits, [](const A& v) { return Context<A>::exp(v); });
}

// Lean: Spec.MoE.biasedKeys — serves property ConstantBiasShiftKeepsTheSameExperts
// c_e = s_e + b_e (zero past the bias's end, as Lean reads it); with no bias c = s exactly
// (no addition, so no 0 + -0 turns a -0 into +0).
template <class A>
std::vector<A> biasedKeys(std::span<const A> bias, std::span<const A> s) {
  std::vector<A> c(s.begin(), s.end());
  if (bias.empty()) return c;
  for (std::size_t e = 0; e < c.size(); ++e) {
    c[e] = Context<A>::add(s[e], e < bias.size() ? bias[e] : Context<A>::zero());
  }
  return c;
}

// Lean: Spec.MoE.groupMembers — serves groupScores (group g is [g*E/G, (g+1)*E/G))
// Total as Lean's Nat division: G = 0 gives E/G = 0, every group empty.
inline std::vector<std::size_t> groupMembers(std::size_t E, std::size_t G, std::size_t g) {
  const std::size_t size = G == 0 ? 0 : E / G;
  std::vector<std::size_t> out(size);
  for (std::size_t j = 0; j < size; ++j) out[j] = g * size + j;
  return out;
}

// Lean: Spec.MoE.groupOf — serves eligible (the group of e: e / (E/G), 0 when E/G = 0)
inline std::size_t groupOf(std::size_t E, std::size_t G, std::size_t e) {
  const std::size_t size = G == 0 ? 0 : E / G;
  return size == 0 ? 0 : e / size;
}

// Lean: Spec.MoE.groupKeys — the keys of group g in index order (zero past c's end).
template <class A>
std::vector<A> groupKeys(std::span<const A> c, std::size_t G, std::size_t g) {
  std::vector<A> keys;
  for (std::size_t e : groupMembers(c.size(), G, g)) {
    keys.push_back(e < c.size() ? c[e] : Context<A>::zero());
  }
  return keys;
}

// Lean: Spec.MoE.groupMax — serves keptGroups (DeepSeek-V2's group score)
// Left fold of max over the group's keys seeded with its first key (softmax's fold);
// an empty group (an invalid G only) scores zero.
template <class A>
A groupMax(std::span<const A> c, std::size_t G, std::size_t g) {
  const std::vector<A> keys = groupKeys(c, G, g);
  if (keys.empty()) return Context<A>::zero();
  A m = keys[0];
  for (const A& x : keys) m = Context<A>::max(m, x);
  return m;
}

// The kept experts of s best first, total: the O(n + k log k) selection when no score is
// NaN, Lean's literal keptExperts otherwise (the gatesKeptMask pattern of softmax.hpp).
template <class A>
std::vector<std::size_t> keptExpertsTotal(std::size_t k, std::span<const A> s) {
  for (const A& v : s) {
    if (Context<A>::isNaN(v)) return keptExpertsLiteral(k, s);
  }
  return keptExperts(k, s);
}

// Lean: Spec.MoE.groupTop2Sum — serves keptGroups (DeepSeek-V3's group score)
// The group's best and second keys by `beats` within the group (ties to the lower index),
// summed best first as sumSpec does: (0 + c_best) + c_second. A group of one gives its one
// key as it is; an empty group zero.
template <class A>
A groupTop2Sum(std::span<const A> c, std::size_t G, std::size_t g) {
  using C = Context<A>;
  const std::vector<A> keys = groupKeys(c, G, g);
  const std::vector<std::size_t> best = keptExpertsTotal(2, std::span<const A>(keys));
  if (best.size() == 2) return C::add(C::add(C::zero(), keys[best[0]]), keys[best[1]]);
  if (best.size() == 1) return keys[best[0]];
  return C::zero();
}

// Lean: Spec.MoE.groupScores — serves keptGroups; property KeptExpertsLieInKeptGroups
// The score of every group 0 .. G-1.
template <class A>
std::vector<A> groupScores(GroupScore gs, std::size_t G, std::span<const A> c) {
  std::vector<A> out;
  out.reserve(G);
  for (std::size_t g = 0; g < G; ++g) {
    out.push_back(gs == GroupScore::max ? groupMax(c, G, g) : groupTop2Sum(c, G, g));
  }
  return out;
}

// Lean: Spec.MoE.keptGroups — serves property KeptExpertsLieInKeptGroups
// The kept groups best first: keptExperts topkGroups over the group scores (ties to the
// lower group index). With one group, that group.
template <class A>
std::vector<std::size_t> keptGroups(const RouteParams<A>& p, std::span<const A> c) {
  const std::vector<A> gsc = groupScores(p.groupScore, p.groups, c);
  return keptExpertsTotal(p.topkGroups, std::span<const A>(gsc));
}

// Lean: Spec.MoE.kept on a score list read as Lean reads it: an index past the end scores
// zero (only an invalid G puts an expert in a group past G - 1). Literal, total.
template <class A>
bool keptAt(std::size_t k, std::span<const A> s, std::size_t i) {
  using C = Context<A>;
  const A si = i < s.size() ? s[i] : C::zero();
  std::size_t count = 0;
  for (std::size_t j = 0; j < s.size(); ++j) {
    count += C::gtBool(s[j], si) || (j < i && !C::gtBool(si, s[j])) ? 1 : 0;
  }
  return count < k;
}

// Lean: Spec.MoE.eligibleIn (all experts at once) — mask[e] == eligible p c e, the group
// scores computed once; fast (O(G log G)) when they are numbers, Lean's literal kept else.
template <class A>
std::vector<bool> eligibleMask(const RouteParams<A>& p, std::span<const A> c) {
  const std::size_t E = c.size();
  std::vector<bool> mask(E, true);
  if (p.groups <= 1) return mask;
  const std::vector<A> gsc = groupScores(p.groupScore, p.groups, c);
  const std::span<const A> gs(gsc);
  bool anyNaN = false;
  for (const A& v : gsc) anyNaN = anyNaN || Context<A>::isNaN(v);
  std::vector<bool> groupKept(p.groups, false);
  if (!anyNaN) {
    for (std::size_t g : keptExperts(p.topkGroups, gs)) groupKept[g] = true;
  }
  for (std::size_t e = 0; e < E; ++e) {
    const std::size_t g = groupOf(E, p.groups, e);
    mask[e] = !anyNaN && g < p.groups ? groupKept[g] : keptAt(p.topkGroups, gs, g);
  }
  return mask;
}

// Lean: Spec.MoE.eligible — serves routeKeptIn_one_group; KeptExpertsLieInKeptGroups
// e's group is kept (kept topkGroups (groupScores ..) (groupOf e)); with G <= 1 every expert.
template <class A>
bool eligible(const RouteParams<A>& p, std::span<const A> c, std::size_t e) {
  requireIndex("eligible", e, c.size());
  if (p.groups <= 1) return true;
  const std::vector<A> gsc = groupScores(p.groupScore, p.groups, c);
  return keptAt(p.topkGroups, std::span<const A>(gsc), groupOf(c.size(), p.groups, e));
}

// Lean: Spec.MoE.routeRank — serves routeKeptIn_one_group; ExactlyMinKEligibleKept
// The literal count of ELIGIBLE experts j with beats c j e (0 = best); O(E) given the
// eligible mask, so all ranks this way are O(E^2). Total on any keys, NaN included.
template <class A>
std::size_t routeRank(const RouteParams<A>& p, std::span<const A> c, std::size_t e) {
  requireIndex("routeRank", e, c.size());
  const std::vector<bool> elig = eligibleMask(p, c);
  std::size_t count = 0;
  for (std::size_t j = 0; j < c.size(); ++j) count += elig[j] && beats(c, j, e) ? 1 : 0;
  return count;
}

// Lean: Spec.MoE.routeKept — serves routeKeptIn_one_group; ExactlyMinKEligibleKept
// eligible e && routeRank e < k. Literal and total.
template <class A>
bool routeKept(const RouteParams<A>& p, std::span<const A> c, std::size_t e) {
  return eligible(p, c, e) && routeRank(p, c, e) < p.k;
}

// Lean: Spec.MoE.routeKept (all experts at once, literal) — mask[e] == routeKept p c e;
// O(E^2), total on any keys including NaN.
template <class A>
std::vector<bool> routeKeptMaskLiteral(const RouteParams<A>& p, std::span<const A> c) {
  const std::vector<bool> elig = eligibleMask(p, c);
  std::vector<bool> mask(c.size(), false);
  for (std::size_t e = 0; e < c.size(); ++e) {
    if (!elig[e]) continue;
    std::size_t r = 0;
    for (std::size_t j = 0; j < c.size(); ++j) r += elig[j] && beats(c, j, e) ? 1 : 0;
    mask[e] = r < p.k;
  }
  return mask;
}

// Lean: Spec.MoE.routeKeptExperts (literal) — serves property ExactlyMinKEligibleKept
// Lean's definition word for word: for each position r < min(k, #eligible), the first
// eligible expert whose routeRank is r; positions no expert holds are skipped (NaN only).
template <class A>
std::vector<std::size_t> routeKeptExpertsLiteral(const RouteParams<A>& p, std::span<const A> c) {
  const std::vector<bool> elig = eligibleMask(p, c);
  std::vector<std::size_t> r(c.size());
  std::size_t count = 0;
  for (std::size_t e = 0; e < c.size(); ++e) {
    count += elig[e] ? 1 : 0;
    for (std::size_t j = 0; j < c.size(); ++j) r[e] += elig[j] && beats(c, j, e) ? 1 : 0;
  }
  std::vector<std::size_t> out;
  for (std::size_t pos = 0; pos < std::min(p.k, count); ++pos) {
    for (std::size_t e = 0; e < c.size(); ++e) {
      if (elig[e] && r[e] == pos) {
        out.push_back(e);
        break;
      }
    }
  }
  return out;
}

// Lean: Spec.MoE.routeKeptExperts — serves property ExactlyMinKEligibleKept
// The kept experts best first (position r holds routeRank r), min(k, #eligible) of them;
// O(E + k log k) after the groups. SpecError on a NaN key (outside StrictWeak).
template <class A>
std::vector<std::size_t> routeKeptExperts(const RouteParams<A>& p, std::span<const A> c) {
  requireNoNaN(c);
  const std::vector<bool> elig = eligibleMask(p, c);
  // The eligible keys keep their relative index order, so `beats` on the sub-vector breaks
  // ties exactly as `beats` on c does.
  std::vector<std::size_t> idx;
  std::vector<A> sub;
  for (std::size_t e = 0; e < c.size(); ++e) {
    if (!elig[e]) continue;
    idx.push_back(e);
    sub.push_back(c[e]);
  }
  std::vector<std::size_t> out = keptExperts(p.k, std::span<const A>(sub));
  for (std::size_t& e : out) e = idx[e];
  return out;
}

// Lean: Spec.MoE.routeKept (all experts at once) — mask[e] == routeKept p c e; fast.
template <class A>
std::vector<bool> routeKeptMask(const RouteParams<A>& p, std::span<const A> c) {
  std::vector<bool> mask(c.size(), false);
  for (std::size_t e : routeKeptExperts(p, c)) mask[e] = true;
  return mask;
}

// Lean: Spec.MoE.routeRank (all experts at once) — r[e] == routeRank p c e; O(E log E).
// Eligible experts sorted by `beats`; an ineligible e counts the eligible experts that beat
// it, a prefix of that order (beats is a strict total order on indices under StrictWeak).
template <class A>
std::vector<std::size_t> routeRanks(const RouteParams<A>& p, std::span<const A> c) {
  requireNoNaN(c);
  const std::vector<bool> elig = eligibleMask(p, c);
  std::vector<std::size_t> order;
  for (std::size_t e = 0; e < c.size(); ++e) {
    if (elig[e]) order.push_back(e);
  }
  const BeatsOrder<A> before{c};
  std::sort(order.begin(), order.end(), before);
  std::vector<std::size_t> r(c.size());
  for (std::size_t pos = 0; pos < order.size(); ++pos) r[order[pos]] = pos;
  for (std::size_t e = 0; e < c.size(); ++e) {
    if (elig[e]) continue;
    const auto it = std::partition_point(order.begin(), order.end(),
                                         [&](std::size_t j) { return before(j, e); });
    r[e] = static_cast<std::size_t>(it - order.begin());
  }
  return r;
}

// The kept mask of routeGatesFromScores: fast when every key is a number, Lean's literal
// ranking otherwise (rows that are not real still have a binary32 spec value).
template <class A>
std::vector<bool> routeKeptMaskTotal(const RouteParams<A>& p, std::span<const A> c) {
  for (const A& v : c) {
    if (Context<A>::isNaN(v)) return routeKeptMaskLiteral(p, c);
  }
  return routeKeptMask(p, c);
}

// Lean: Spec.MoE.routeGatesFromScores — serves routeGatesWith_eq_gatesVecSpecWith and
// RenormalisedGatesSumToTheScale.
// Dense gates (length E) given the scores s and the keys c (no exp: runs over mpq_class).
// Kept on c; w_e = s_e (the UNBIASED score); if renormalize, w_e / total with total =
// sumSpec of s over the kept experts in index order; then times scale. Others exactly 0.
template <class A>
std::vector<A> routeGatesFromScores(const RouteParams<A>& p, std::span<const A> s,
                                    std::span<const A> c) {
  using C = Context<A>;
  requireSameSize("routeGatesFromScores: scores vs keys", s.size(), c.size());
  const std::vector<bool> mask = routeKeptMaskTotal(p, c);
  A total = C::zero();
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (mask[j]) total = C::add(total, s[j]);
  }
  std::vector<A> gates(s.size(), C::zero());
  for (std::size_t e = 0; e < s.size(); ++e) {
    if (!mask[e]) continue;
    const A w = p.renormalize ? C::div(s[e], total) : s[e];
    gates[e] = C::mul(w, p.scale);
  }
  return gates;
}

// Lean: Spec.MoE.routeGatesWith — serves routeGatesWith_eq_gatesVecSpecWith, the Lean replay
template <class A, class ExpFn>
std::vector<A> routeGatesWith(const RouteParams<A>& p, std::span<const A> logits, ExpFn&& expFn) {
  const std::vector<A> s = scoresSpecWith(p.score, logits, expFn);
  const std::vector<A> c = biasedKeys(p.bias, std::span<const A>(s));
  return routeGatesFromScores(p, std::span<const A>(s), std::span<const A>(c));
}

// Lean: Spec.MoE.routeGates — serves routeGates_eq_gatesVecSpec, routeGatesWith_eq_gatesVecSpecWith
template <HasExp A>
std::vector<A> routeGates(const RouteParams<A>& p, std::span<const A> logits) {
  return routeGatesWith(p, logits, [](const A& v) { return Context<A>::exp(v); });
}

}  // namespace moe::oracle
