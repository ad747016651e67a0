// The scalar moe_route_v2: the binary32 evaluation of the routing family's spec, op by
// op, with the host expf (Spec.MoE: scoresSpec, biasedKeys, groupScores, keptGroups,
// routeKeptExperts, routeGatesFromScores).
#include <cmath>
#include <cstdint>

#include "family_select.hpp"
#include "moe/detail/route_kernels.hpp"
#include "softmax_spec32.hpp"
#include "topk_select.hpp"

namespace moe::detail {
namespace {

// sigmoidSpec x = 1 / (1 + exp(0 - x)).
void sigmoidSpec32(const float* x, int32_t experts, float* s) {
  for (int32_t i = 0; i < experts; ++i) s[i] = 1.0f / (1.0f + std::exp(0.0f - x[i]));
}

// Returns false when a key or a group score is NaN (the row's defined output is then the
// contract's nonfinite_rows, not the spec's ranks over NaN).
bool scoresAndKeys(const FamilyParams& p, const float* x, FamilyScratch& scratch) {
  float* s = scratch.scores.data();
  float* c = scratch.keys.data();
  if (p.sigmoid) {
    sigmoidSpec32(x, p.experts, s);
  } else {
    softmaxSpec32(x, p.experts, s);
  }
  bool nan = false;
  for (int32_t e = 0; e < p.experts; ++e) {
    c[e] = p.bias != nullptr ? s[e] + p.bias[e] : s[e];
    nan |= std::isnan(c[e]);
  }
  if (nan || p.groups == 1) return !nan;
  const int32_t size = p.groupSize();
  for (int32_t g = 0; g < p.groups; ++g) {
    const float* cg = c + int64_t{g} * size;
    scratch.groupScore[g] = p.top2Sum ? groupTop2SumScalar(cg, size) : groupMaxScalar(cg, size);
    nan |= std::isnan(scratch.groupScore[g]);
  }
  return !nan;
}

}  // namespace

void scalarFamilyRows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                      float* gates) {
  FamilyScratch scratch(p, static_cast<size_t>(p.experts));
  const int32_t k = p.k;
  for (int64_t t = 0; t < rows; ++t) {
    int32_t* rowIds = ids + t * k;
    float* rowGates = gates + t * k;
    if (!scoresAndKeys(p, logits + t * p.experts, scratch)) {
      writeNonfiniteRow(k, p.keptCount(), rowIds, rowGates);
      continue;
    }
    if (p.groups > 1) keepGroupsScalar(p, scratch);
    selectKeptScalar(p, scratch);
    writeFamilyGates(p, scratch.scores.data(), scratch.keptIds.data(), rowIds, rowGates);
  }
}

}  // namespace moe::detail
