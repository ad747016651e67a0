#pragma once
// Certified enclosures of the routing family (family.hpp) over the reals, for binary32
// logits, biases and scale: sigmoid scores, biased keys, group scores, the real-number
// routing decision and the gates.
//
// The logits, biases and scale are binary32 numbers, hence real numbers. Over the reals
// s_e = softmax or sigmoid of the logits, c_e = s_e + b_e, group scores are the max or the
// sum of the two best keys of a group, and the kept groups and experts follow the exact
// real order with ties to the lower index. Exact real ties are decided exactly, not by
// precision: every key and group score is q + sum_a coef_a * atom_a with q rational and
// atoms sigmoid(c) (c > 0) or exp(l) / sum_j exp(l_j), which are linearly independent over
// Q (Lindemann), so two such values are equal exactly when their forms agree (docs/oracle.md,
// The routing family). Unequal values are separated by the Ziv loop; values that stay
// inseparable up to options.maxPrecision (keys of sigmoid(1e4) and sigmoid(2e4), say) make
// the decision abstain (`decided = false`, `tooClose` says which), never guess.
#include <mpfr.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "moe/oracle/certified/interval.hpp"
#include "moe/oracle/family.hpp"

namespace moe::oracle::certified {

// A row has real-number scores when: softmax, it is a real row (gates.hpp isRealRow);
// sigmoid, no logit is NaN (-inf and +inf score exactly 0 and 1, sigmoidSpec's limits).
// The bias, if any, must be finite and of length E; the scale finite; the parameters valid.
bool isRealRouteRow(const RouteParams<float>& p, std::span<const float> logits);

// Throws SpecError saying what is not real or which paramsValid rule fails.
void requireRealRouteRow(const RouteParams<float>& p, std::span<const float> logits);

// sigmoid(l) = 1 / (1 + exp(-l)) of each logit (NaN rejected; -inf, 0, +inf exact).
std::vector<Certified> sigmoidEnclosure(std::span<const float> logits,
                                        const EnclosureOptions& options = {});

// The scores s: softmaxEnclosure or sigmoidEnclosure.
std::vector<Certified> scoresEnclosure(ScoreFn score, std::span<const float> logits,
                                       const EnclosureOptions& options = {});

// The selection keys c_e = s_e + b_e (c = s when the bias is empty).
std::vector<Certified> biasedKeysEnclosure(ScoreFn score, std::span<const float> logits,
                                           std::span<const float> bias,
                                           const EnclosureOptions& options = {});

// The G group scores of p over the real keys (groupMax or groupTop2Sum; with G = 1 the
// one group's score as groupScore says). The top-two sum does not depend on which of two
// tied keys is second, so it needs no decision.
std::vector<Certified> groupScoresEnclosure(const RouteParams<float>& p,
                                            std::span<const float> logits,
                                            const EnclosureOptions& options = {});

// The routing of p over the reals. When decided, the fields are exactly keptGroups,
// eligible, routeKept and routeKeptExperts evaluated over the reals.
struct RouteDecision {
  bool decided = false;
  std::string tooClose;          // when !decided: the two keys or group scores not separated
  mpfr_prec_t precision = 0;     // the working precision that decided; 0: the logits decided
  std::vector<bool> keptGroups;  // G entries
  std::vector<bool> eligible;    // E entries
  std::vector<bool> kept;        // E entries
  std::vector<std::size_t> keptExperts;  // best first, min(k, #eligible) of them
};
RouteDecision routeDecisionEnclosure(const RouteParams<float>& p, std::span<const float> logits,
                                     const EnclosureOptions& options = {});

// Gates of a given kept set S, in S's order: w_e = s_e (unbiased), over S's sum of s when
// p.renormalize, times p.scale. For judging a router's own kept set, as keptGatesEnclosure.
// SpecError when renormalising a set whose scores are all exactly 0 (0/0, not real).
std::vector<Certified> routeKeptGatesEnclosure(const RouteParams<float>& p,
                                               std::span<const float> logits,
                                               std::span<const std::size_t> keptSet,
                                               const EnclosureOptions& options = {});

// Lean: Spec.MoE.routeGates over the reals: the decision, and when decided the dense gates
// (length E, exact 0 off the kept set); gates is empty when the decision abstains.
struct RouteGatesResult {
  RouteDecision decision;
  std::vector<Certified> gates;
};
RouteGatesResult routeGatesEnclosure(const RouteParams<float>& p, std::span<const float> logits,
                                     const EnclosureOptions& options = {});

}  // namespace moe::oracle::certified
