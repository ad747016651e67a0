// The baseline of the family's benchmarks: what vLLM's reference `grouped_topk` (and
// `fused_topk` without groups) does, in plain C++ with std::partial_sort in place of
// torch.topk. Per token: scores (softmax or sigmoid, std::exp), keys = scores + bias, group
// scores (max, or the sum of the two best by partial_sort), the best groups by
// partial_sort, the ineligible keys masked to -inf, the top-k of the masked keys by
// partial_sort over (key, index) pairs, the unbiased scores gathered, renormalised and
// scaled.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace moe::bench {

struct GroupedTopkConfig {
  int32_t experts, k;
  bool sigmoid;
  const float* bias;  // or nullptr
  int32_t groups, topkGroups;
  bool top2Sum, renormalize;
  float scale;
};

inline void groupedTopkRows(const GroupedTopkConfig& c, const float* logits, int64_t rows,
                            int32_t* ids, float* gates) {
  const int32_t n = c.experts;
  const int32_t size = n / c.groups;
  std::vector<float> scores(static_cast<size_t>(n));
  std::vector<std::pair<float, int32_t>> keys(static_cast<size_t>(n));
  std::vector<std::pair<float, int32_t>> groupScores(static_cast<size_t>(c.groups));
  std::vector<float> groupKeys(static_cast<size_t>(size));
  std::vector<char> keptGroup(static_cast<size_t>(c.groups));
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (int64_t t = 0; t < rows; ++t) {
    const float* x = logits + t * n;
    if (c.sigmoid) {
      for (int32_t e = 0; e < n; ++e) scores[e] = 1.0f / (1.0f + std::exp(-x[e]));
    } else {
      const float m = *std::max_element(x, x + n);
      float sum = 0.0f;
      for (int32_t e = 0; e < n; ++e) sum += scores[e] = std::exp(x[e] - m);
      for (auto& s : scores) s /= sum;
    }
    for (int32_t e = 0; e < n; ++e) keys[e] = {scores[e] + (c.bias ? c.bias[e] : 0.0f), e};
    if (c.groups > 1) {
      for (int32_t g = 0; g < c.groups; ++g) {
        for (int32_t i = 0; i < size; ++i) groupKeys[i] = keys[g * size + i].first;
        if (c.top2Sum) {
          std::partial_sort(groupKeys.begin(), groupKeys.begin() + 2, groupKeys.end(),
                            std::greater<>());
          groupScores[g] = {groupKeys[0] + groupKeys[1], g};
        } else {
          groupScores[g] = {*std::max_element(groupKeys.begin(), groupKeys.end()), g};
        }
      }
      std::partial_sort(groupScores.begin(), groupScores.begin() + c.topkGroups, groupScores.end(),
                        better);
      std::fill(keptGroup.begin(), keptGroup.end(), 0);
      for (int32_t j = 0; j < c.topkGroups; ++j) keptGroup[groupScores[j].second] = 1;
      for (int32_t e = 0; e < n; ++e) {
        if (!keptGroup[e / size]) keys[e].first = -std::numeric_limits<float>::infinity();
      }
    }
    const int32_t kk = std::min(c.k, n);
    std::partial_sort(keys.begin(), keys.begin() + kk, keys.end(), better);
    float total = 0.0f;
    for (int32_t s = 0; s < kk; ++s) total += scores[keys[s].second];
    for (int32_t s = 0; s < c.k; ++s) {
      const bool kept = s < kk;
      const float w = kept ? scores[keys[s].second] : 0.0f;
      ids[t * c.k + s] = kept ? keys[s].second : -1;
      gates[t * c.k + s] = (c.renormalize ? w / total : w) * c.scale;
    }
  }
}

}  // namespace moe::bench
