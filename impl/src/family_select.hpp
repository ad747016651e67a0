// Scalar pieces of the routing family (moe_route_v2) shared by the scalar and SIMD
// kernels, each step as the spec states it (Spec.MoE: groupMax, groupTop2Sum, keptGroups,
// routeKeptExperts, routeGatesFromScores). Rows reaching them hold no NaN key.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "topk_select.hpp"

namespace moe::detail {

// groupMax: left fold of Lean's max (a <= b ? b : a) seeded with the first key.
inline float groupMaxScalar(const float* c, int32_t n) {
  float m = c[0];
  for (int32_t i = 1; i < n; ++i) m = m <= c[i] ? c[i] : m;
  return m;
}

// groupTop2Sum: the best and second keys by beats (ties to the lower index), summed best
// first from zero: (0 + best) + second. n >= 2 (the domain).
inline float groupTop2SumScalar(const float* c, int32_t n) {
  int32_t b1 = beatsAt(c[1], 1, c[0], 0) ? 1 : 0;
  int32_t b2 = 1 - b1;
  for (int32_t i = 2; i < n; ++i) {
    if (beatsAt(c[i], i, c[b1], b1)) {
      b2 = b1;
      b1 = i;
    } else if (beatsAt(c[i], i, c[b2], b2)) {
      b2 = i;
    }
  }
  return (0.0f + c[b1]) + c[b2];
}

// Per-row working memory of the family's scalar steps.
struct FamilyScratch {
  std::vector<float> scores;        // s, E entries (padded by the SIMD kernel)
  std::vector<float> keys;          // c = s + b (or s), same
  std::vector<float> groupScore;    // G entries (and room for one vector)
  std::vector<float> groupSecond;   // each group's second key, where a kernel has them
  std::vector<int32_t> keptGroups;  // the kept groups, in index order
  std::vector<int32_t> order;       // group or eligible-expert indices being ranked
  std::vector<float> eligibleKeys;  // the eligible experts' keys, in index order
  std::vector<int32_t> keptIds;     // min(k, eligible), best first
  std::vector<float> keptKeys;

  FamilyScratch(const FamilyParams& p, size_t paddedExperts) {
    scores.resize(paddedExperts);
    keys.resize(paddedExperts);
    // At least 16: the SIMD kernels load and store the group scores as one vector.
    groupScore.resize(static_cast<size_t>(std::max(p.groups, 16)));
    groupSecond.resize(static_cast<size_t>(std::max(p.groups, 16)));
    keptGroups.resize(static_cast<size_t>(p.topkGroups));
    order.resize(static_cast<size_t>(std::max(p.groups, p.experts)));
    eligibleKeys.resize(static_cast<size_t>(p.eligibleCount()));
    keptIds.resize(static_cast<size_t>(p.keptCount()));
    keptKeys.resize(static_cast<size_t>(p.keptCount()));
  }
};

// keptGroups: the topk_groups best group scores by beats (ties to the lower group index),
// written to scratch.keptGroups in index order. Group scores hold no NaN, so beats is a
// strict total order and "rank < topk" is the first topk of the sorted order.
inline void keepGroupsScalar(const FamilyParams& p, FamilyScratch& scratch) {
  const float* g = scratch.groupScore.data();
  int32_t* order = scratch.order.data();
  for (int32_t i = 0; i < p.groups; ++i) order[i] = i;
  std::partial_sort(order, order + p.topkGroups, order + p.groups,
                    [g](int32_t a, int32_t b) { return beatsAt(g[a], a, g[b], b); });
  std::copy(order, order + p.topkGroups, scratch.keptGroups.begin());
  std::sort(scratch.keptGroups.begin(), scratch.keptGroups.end());
}

// routeKeptExperts over the eligible experts (all of them without groups): the
// keptCount() best keys, best first, into scratch.keptIds/keptKeys. The eligible keys are
// gathered in index order, so a tie to the lower position is a tie to the lower expert.
inline void selectKeptScalar(const FamilyParams& p, FamilyScratch& scratch) {
  const int32_t kk = p.keptCount();
  if (p.groups == 1) {
    selectTopKScalar(scratch.keys.data(), p.experts, kk, scratch.keptIds.data(),
                     scratch.keptKeys.data());
    return;
  }
  const int32_t size = p.groupSize();
  float* eligible = scratch.eligibleKeys.data();
  for (int32_t j = 0; j < p.topkGroups; ++j) {
    const float* from = scratch.keys.data() + int64_t{scratch.keptGroups[j]} * size;
    std::copy(from, from + size, eligible + int64_t{j} * size);
  }
  selectTopKScalar(eligible, p.eligibleCount(), kk, scratch.keptIds.data(),
                   scratch.keptKeys.data());
  for (int32_t s = 0; s < kk; ++s) {
    const int32_t pos = scratch.keptIds[s];
    scratch.keptIds[s] = scratch.keptGroups[pos / size] * size + pos % size;
  }
}

// The gates given the kept scores' sum in index order (`total`, read only when
// renormalising): (s / total) * scale, or s * scale. Writes every slot of the row.
inline void writeFamilyGatesWithTotal(const FamilyParams& p, const float* s, const int32_t* keptIds,
                                      float total, int32_t* ids, float* gates) {
  const int32_t kk = p.keptCount();
  for (int32_t slot = 0; slot < kk; ++slot) {
    const float w = p.renormalize ? s[keptIds[slot]] / total : s[keptIds[slot]];
    ids[slot] = keptIds[slot];
    gates[slot] = w * p.scale;
  }
  clearEmptySlots(p.k, kk, ids, gates);
}

// routeGatesFromScores for the kept experts (best first): w = s (the unbiased score);
// if renormalising, w / (sum of the kept s in index order, from 0); then times scale.
// Writes every slot of the row, empty ones -1 and 0.
inline void writeFamilyGates(const FamilyParams& p, const float* s, const int32_t* keptIds,
                             int32_t* ids, float* gates) {
  const int32_t kk = p.keptCount();
  float total = 1.0f;
  if (p.renormalize) {
    total = 0.0f;
    if (kk <= kInsertionTopKMax) {
      int32_t byIndex[kInsertionTopKMax];
      std::copy(keptIds, keptIds + kk, byIndex);
      std::sort(byIndex, byIndex + kk);
      for (int32_t i = 0; i < kk; ++i) total += s[byIndex[i]];
    } else {
      thread_local std::vector<int32_t> byIndex;
      byIndex.assign(keptIds, keptIds + kk);
      std::sort(byIndex.begin(), byIndex.end());
      for (int32_t i = 0; i < kk; ++i) total += s[byIndex[i]];
    }
  }
  writeFamilyGatesWithTotal(p, s, keptIds, total, ids, gates);
}

}  // namespace moe::detail
