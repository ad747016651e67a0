// The family verdict's numbers for the selection (docs/fuzz.md, "The routing family"): the
// row's scores and biased keys in binary64 with their errors, the group scores, and the
// bands (value and binary32 budget, enclosed) that the selection's checks compare, from
// binary64 and from the oracle's MPFR enclosures. The storage is the caller's, reused from
// token to token.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "ladder.hpp"
#include "moe/fuzz/case.hpp"

namespace moe::fuzz {

// The spec's choices of a family that the verdict branches on.
inline bool isSoftmax(const Family& f) {
  return f.score == ScoreFunction::kSoftmax;
}
inline bool isTop2Sum(const Family& f) {
  return f.groupScore == GroupScoreFunction::kTop2Sum;
}
inline bool renormalises(const Family& f) {
  return f.renormalize == 1;
}

// The binary32 budget of one key, beta = |c32 - c| for a router that evaluates the spec in
// binary32 with an exp within `cUlp` ulp (docs/fuzz.md), at score s and key magnitude absC.
// `tinyAt` is the score that decides sigmoid's underflow term (a step, not monotone: callers
// that bound it pass the other end of s's interval to keep each bound on its side).
double keyBudget(const Family& f, double s, double tinyAt, double shift, double absC, int32_t E,
                 double cUlp);

// The row in binary64: scores s with error err (|s64 - s| <= err), keys c = s + b with
// cerr, beta = the key's binary32 budget with its own error betaErr (beta is increasing in
// s and |c|), the softmax shift m - x (inf for a -inf logit, 0 for sigmoid) and each
// expert's exact-tie form (equal forms: equal keys over the reals).
struct FamilyRow {
  std::vector<double> s, serr, c, cerr, beta, betaErr, shift;
  std::vector<uint64_t> form;
};
void evaluateRow(std::span<const float> x, const Family& f, double cUlp, FamilyRow& r);

// The binary64 sigmoid score evaluateRow gives a logit: 1 / (1 + exp(-x)), exp's argument
// exact, two roundings.
inline double sigmoid64(float x) {
  return x == -INFINITY ? 0.0 : x == INFINITY ? 1.0 : 1.0 / (1.0 + std::exp(-double{x}));
}

// The binary64 key evaluateRow gives expert i of a sigmoid row: sigmoid64 plus the bias.
inline double sigmoidKey64(std::span<const float> x, const Family& f, int32_t i) {
  return sigmoid64(x[i]) + (f.bias.empty() ? 0.0 : double{f.bias[i]});
}

// The binary64 group score that evaluateRow and groupsOf give a group of a sigmoid row,
// bit for bit (the same operations on the same values), without the rest of the row: the
// first level asks it of the few groups whose order its own bounds cannot tell. members:
// the group's experts that may be among its best (one, or two for a top-2 sum) in binary64;
// the caller has made sure that two of them are above every other member.
double sigmoidGroupScore64(std::span<const float> x, const Family& f,
                           std::span<const int32_t> members, bool top2);

// A group's exact-tie form: the sorted forms of its best one or two keys, exact only when
// they are told apart from the rest of the group (else the group never ties exactly).
struct GroupForm {
  std::array<uint64_t, 2> forms{};
  bool exact = false;
  bool operator==(const GroupForm&) const = default;
};

// Group scores with their binary64 error and exact-tie form.
struct Groups {
  int32_t G = 1, size = 0;
  std::vector<double> score, err;
  std::vector<GroupForm> form;
};
void groupsOf(const FamilyRow& r, const Family& f, int32_t E, Groups& g);

// The selection's bands for every expert (key c) and group (group score).
struct SelectionBands {
  std::vector<Band> key, group;
  std::vector<double> groupGamma;      // binary64 budget of each group, for reports
  std::vector<double> betaLo, betaHi;  // scratch: each key's budget, enclosed
};

// From the binary64 row (gr: null without groups).
void doubleBands(const FamilyRow& r, const Groups* gr, const Family& f, SelectionBands& b);

// From MPFR enclosures of the scores (relative width 2^-60) and of the group scores
// (oracle/certified/family.hpp): the level that places a difference the binary64 filter
// leaves within its error of the budget. Every key band is relative to refKey and every
// group band to refGroup (certified_band.hpp: the ends are differences computed in MPFR,
// so near the references their binary64 rounding is that of the difference; the
// comparisons, among keys or among groups, are unchanged by the shift); the budgets are
// bounded at 192 bits from the enclosures' ends (budget_formulas.hpp, directed.hpp), not
// rounded to binary64. Throws SpecError where the oracle does.
void certifiedBands(std::span<const float> x, const Family& f, int32_t k, const FamilyRow& r,
                    const Groups* gr, double cUlp, double refKey, double refGroup,
                    SelectionBands& b);

}  // namespace moe::fuzz
