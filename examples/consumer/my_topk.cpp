#include "my_topk.hpp"

#include <moe/route_abi.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace {

// The softmax of the kept logits, largest first (rank order); with MY_TOPK_PLANTED_BUG the
// denominator sums every expert of the row, as a kernel mixing up two modes would.
void keptGates(const float* x, int32_t experts, const int32_t* kept, int32_t n, float* gates) {
  const float top = x[kept[0]];
  float sum = 0.0f;
#ifdef MY_TOPK_PLANTED_BUG
  for (int32_t e = 0; e < experts; ++e) sum += std::exp(x[e] - top);
#else
  (void)experts;
  for (int32_t s = 0; s < n; ++s) sum += std::exp(x[kept[s]] - top);
#endif
  for (int32_t s = 0; s < n; ++s) gates[s] = std::exp(x[kept[s]] - top) / sum;
}

}  // namespace

int my_topk_route(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                  float* gates) {
  if (tokens < 0 || experts < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
  if ((logits == nullptr && tokens * experts > 0) ||
      ((ids == nullptr || gates == nullptr) && tokens * k > 0)) {
    return MOE_ROUTE_ENULL;
  }
  if (experts > 4096 || k > 4096 || tokens > 65536) return MOE_ROUTE_EUNSUPPORTED;
  const int32_t n = std::min(k, experts);
  std::vector<int32_t> order(static_cast<size_t>(experts));
  for (int32_t t = 0; t < tokens; ++t) {
    const float* x = logits + static_cast<size_t>(t) * experts;
    int32_t* id = ids + static_cast<size_t>(t) * k;
    float* gate = gates + static_cast<size_t>(t) * k;
    std::iota(order.begin(), order.end(), 0);
    // A stable sort keeps equal logits in index order: the spec's tie rule.
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
    std::copy_n(order.begin(), n, id);
    std::fill(id + n, id + k, -1);
    std::fill(gate + n, gate + k, 0.0f);
    if (n > 0) keptGates(x, experts, id, n, gate);
  }
  return MOE_ROUTE_OK;
}
