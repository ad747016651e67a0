// The baseline the issue names: ONNX Runtime's and ggml's CPU top-k approach. Per token:
// softmax (max, expf, sum, divide), then std::partial_sort of (probability, index) pairs,
// then renormalise over the kept ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace moe::bench {

inline void partialSortRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                            int32_t* ids, float* gates) {
  std::vector<std::pair<float, int32_t>> scored(static_cast<size_t>(experts));
  const int32_t kk = std::min(k, experts);
  for (int64_t t = 0; t < rows; ++t) {
    const float* x = logits + t * experts;
    float m = x[0];
    for (int32_t i = 1; i < experts; ++i) m = std::max(m, x[i]);
    float sum = 0.0f;
    for (int32_t i = 0; i < experts; ++i) {
      scored[i] = {std::exp(x[i] - m), i};
      sum += scored[i].first;
    }
    for (auto& s : scored) s.first /= sum;
    std::partial_sort(scored.begin(), scored.begin() + kk, scored.end(),
                      [](const auto& a, const auto& b) {
                        return a.first > b.first || (a.first == b.first && a.second < b.second);
                      });
    float kept = 0.0f;
    for (int32_t s = 0; s < kk; ++s) kept += scored[s].first;
    for (int32_t s = 0; s < k; ++s) {
      ids[t * k + s] = s < kk ? scored[s].second : -1;
      gates[t * k + s] = s < kk ? scored[s].first / kept : 0.0f;
    }
  }
}

}  // namespace moe::bench
