// The scalar routers: the straightforward fused loop, the baseline. scalar-probs is the
// binary32 evaluation of the spec (softmaxVecSpec then gatesVecSpec) with the host expf.
#include <cmath>
#include <cstdint>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "softmax_spec32.hpp"
#include "topk_select.hpp"

namespace moe::detail {
namespace {

bool rowHasNaN(const float* x, int32_t experts) {
  bool nan = false;
  for (int32_t i = 0; i < experts; ++i) nan |= std::isnan(x[i]);
  return nan;
}

void probsRow(const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
              std::vector<float>& scratch) {
  const int32_t kk = std::min(k, experts);
  float* p = scratch.data();
  float* keptProbs = p + experts;
  auto* keptIds = reinterpret_cast<int32_t*>(keptProbs + kk);
  softmaxSpec32(x, experts, p);
  // Any NaN, a +inf, or all -inf logits make every probability NaN (the sum is NaN).
  if (std::isnan(p[0])) {
    writeNonfiniteRow(k, kk, ids, gates);
    return;
  }
  selectTopKScalar(p, experts, kk, keptIds, keptProbs);
  renormaliseKept(keptIds, keptProbs, kk, ids, gates);
  clearEmptySlots(k, kk, ids, gates);
}

// Logits mode: top-k on the logits, then softmax over the kept ones in rank order
// (m = the best kept logit, k exponentials, sum best first, one division each).
void logitsRow(const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
               std::vector<float>& scratch) {
  const int32_t kk = std::min(k, experts);
  if (rowHasNaN(x, experts)) {
    writeNonfiniteRow(k, kk, ids, gates);
    return;
  }
  float* keptLogits = scratch.data();
  auto* keptIds = reinterpret_cast<int32_t*>(keptLogits + kk);
  selectTopKScalar(x, experts, kk, keptIds, keptLogits);
  const float m = keptLogits[0];  // +inf or -inf here makes every gate NaN (inf - inf)
  float sum = 0.0f;
  for (int32_t s = 0; s < kk; ++s) {
    gates[s] = std::exp(keptLogits[s] - m);
    sum += gates[s];
  }
  for (int32_t s = 0; s < kk; ++s) {
    ids[s] = keptIds[s];
    gates[s] = gates[s] / sum;
  }
  clearEmptySlots(k, kk, ids, gates);
}

using RowFn = void (*)(const float*, int32_t, int32_t, int32_t*, float*, std::vector<float>&);

void eachRow(RowFn row, const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
             float* gates) {
  std::vector<float> scratch(static_cast<size_t>(experts) + 2 * static_cast<size_t>(k));
  for (int64_t t = 0; t < rows; ++t) {
    row(logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
  }
}

}  // namespace

void scalarProbsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                     float* gates) {
  eachRow(probsRow, logits, rows, experts, k, ids, gates);
}

void scalarLogitsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                      float* gates) {
  eachRow(logitsRow, logits, rows, experts, k, ids, gates);
}

}  // namespace moe::detail
