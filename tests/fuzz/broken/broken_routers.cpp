#include "moe/fuzz/broken_routers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace moe::fuzz {

namespace {

const BugInfo kBugs[] = {
    {Bug::kTieHigh, "tie-high", "tie-higher-index"},
    {Bug::kNoMaxSubtract, "no-max-subtract", "gate-nonfinite|beaten-kept|gate-error"},
    {Bug::kNegZeroAbove, "neg-zero-above", "tie-higher-index"},
    {Bug::kMaskZero, "mask-zero", "id-repeated"},
    {Bug::kNoRenorm, "no-renorm", "gate-error"},
    {Bug::kSimdTail, "simd-tail", "beaten-kept|kept-set|slot-count|tie-higher-index"},
    {Bug::kOobId, "oob-id", "id-out-of-range"},
    {Bug::kGlobalMax, "global-max", "batch-variance|gate-nonfinite|gate-error|beaten-kept"},
};

// -0 sorts above +0: the signed-integer view of the bits breaks the tie (the bug).
bool negZeroGreater(float a, float b) {
  if (a == b && a == 0.0f) return std::signbit(a) && !std::signbit(b);
  return a > b;
}

void routeToken(Bug bug, int32_t E, int32_t k, const float* x, float batchMax, int32_t* ids,
                float* gates) {
  const int32_t n = std::min(k, E);
  // The experts this router looks at: a vector loop without a tail drops E mod 8.
  const int32_t seen = bug == Bug::kSimdTail ? E - E % 8 : E;
  float m = seen > 0 ? x[0] : 0.0f;
  for (int32_t i = 0; i < seen; ++i) m = m <= x[i] ? x[i] : m;
  if (bug == Bug::kNoMaxSubtract) m = 0.0f;
  if (bug == Bug::kGlobalMax) m = batchMax;
  std::vector<float> p(static_cast<size_t>(seen));
  float d = 0.0f;
  for (int32_t i = 0; i < seen; ++i) {
    p[i] = std::exp(x[i] - m);
    d += p[i];
  }
  for (int32_t i = 0; i < seen; ++i) p[i] /= d;

  std::vector<int32_t> chosen;
  if (bug == Bug::kMaskZero) {
    // Iterative top-k on logits; a chosen expert's score is overwritten with 0.0, so when
    // every remaining logit is negative the same expert wins again.
    std::vector<float> score(x, x + seen);
    for (int32_t s = 0; s < n && seen > 0; ++s) {
      int32_t best = 0;
      for (int32_t i = 1; i < seen; ++i) {
        if (score[i] > score[best]) best = i;
      }
      chosen.push_back(best);
      score[best] = 0.0f;
    }
  } else {
    std::vector<int32_t> order(static_cast<size_t>(seen));
    std::iota(order.begin(), order.end(), 0);
    auto better = [&](int32_t a, int32_t b) {
      if (bug == Bug::kNegZeroAbove) {
        if (negZeroGreater(x[a], x[b])) return true;
        if (negZeroGreater(x[b], x[a])) return false;
        return a < b;
      }
      if (p[a] > p[b]) return true;
      if (p[b] > p[a]) return false;
      return bug == Bug::kTieHigh ? a > b : a < b;
    };
    const int32_t take = std::min(n, seen);
    std::partial_sort(order.begin(), order.begin() + take, order.end(), better);
    chosen.assign(order.begin(), order.begin() + take);
  }

  // Gates: the kept probabilities renormalised, summed in index order (the spec's order).
  std::vector<int32_t> byIndex = chosen;
  std::sort(byIndex.begin(), byIndex.end());
  float kept = 0.0f;
  for (int32_t i : byIndex) kept += p[i];
  for (int32_t s = 0; s < k; ++s) {
    if (s < static_cast<int32_t>(chosen.size())) {
      ids[s] = chosen[s];
      gates[s] = bug == Bug::kNoRenorm ? p[chosen[s]] : p[chosen[s]] / kept;
    } else {
      ids[s] = (bug == Bug::kOobId && s >= E) ? E : -1;
      gates[s] = 0.0f;
    }
  }
}

}  // namespace

const BugInfo* brokenRouterBugs(int* count) {
  *count = static_cast<int>(std::size(kBugs));
  return kBugs;
}

const BugInfo* findBug(std::string_view name) {
  for (const auto& b : kBugs) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

int routeWithBug(Bug bug, int32_t tokens, int32_t experts, int32_t k, const float* logits,
                 int32_t* ids, float* gates) {
  if (tokens < 0 || experts < 1 || k < 0 ||
      (tokens > 0 && (!logits || (k > 0 && (!ids || !gates))))) {
    return 1;
  }
  float batchMax = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < int64_t{tokens} * experts; ++i) {
    batchMax = batchMax <= logits[i] ? logits[i] : batchMax;
  }
  for (int32_t t = 0; t < tokens; ++t) {
    routeToken(bug, experts, k, logits + int64_t{t} * experts, batchMax, ids + int64_t{t} * k,
               gates + int64_t{t} * k);
  }
  return 0;
}

std::string_view brokenContractJSON(Bug bug) {
  if (bug == Bug::kMaskZero || bug == Bug::kNegZeroAbove) {
    return R"({"abi":"moe_route_v1","selects_on":"logits","slot_order":"rank",)"
           R"("batch_invariant":true,"compute":"binary32","exp_max_ulp":1})";
  }
  return R"({"abi":"moe_route_v1","selects_on":"probabilities","slot_order":"rank",)"
         R"("batch_invariant":true,"compute":"binary32","exp_max_ulp":1})";
}

}  // namespace moe::fuzz
