// A plain double-precision MoE forward for the layer tests: no blocking, no grouping, the
// textbook formulas, so a bug in the layer's fast paths cannot hide in shared code.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "moe/layer.hpp"

namespace moe::test {

/// out[t][c] = sum over kept slots of g * expert(x_t)[c], everything in double.
inline std::vector<double> referenceForward(const Layer& layer, const RowMatrix& x,
                                            const Routing& routing) {
  const std::int64_t d = layer.modelDim(), h = layer.hiddenDim();
  std::vector<double> out(static_cast<std::size_t>(x.rows() * d), 0.0);
  for (std::int64_t t = 0; t < x.rows(); ++t) {
    for (std::int64_t s = 0; s < routing.k; ++s) {
      const std::int32_t e = routing.ids[static_cast<std::size_t>(t * routing.k + s)];
      if (e < 0) continue;
      const double g = routing.gates[static_cast<std::size_t>(t * routing.k + s)];
      const SwiGluExpert& w = layer.expert(e);
      std::vector<double> hidden(static_cast<std::size_t>(h));
      for (std::int64_t j = 0; j < h; ++j) {
        double a = 0, b = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          a += static_cast<double>(x(t, i)) * w.w1(i, j);
          b += static_cast<double>(x(t, i)) * w.w3(i, j);
        }
        hidden[static_cast<std::size_t>(j)] = a / (1.0 + std::exp(-a)) * b;
      }
      for (std::int64_t c = 0; c < d; ++c) {
        double y = 0;
        for (std::int64_t j = 0; j < h; ++j) y += hidden[static_cast<std::size_t>(j)] * w.w2(j, c);
        out[static_cast<std::size_t>(t * d + c)] += g * y;
      }
    }
  }
  return out;
}

/// Router logits x * W in double.
inline std::vector<double> referenceLogits(const Layer& layer, const RowMatrix& x) {
  const std::int64_t d = layer.modelDim(), experts = layer.expertCount();
  std::vector<double> logits(static_cast<std::size_t>(x.rows() * experts), 0.0);
  for (std::int64_t t = 0; t < x.rows(); ++t) {
    for (std::int64_t e = 0; e < experts; ++e) {
      for (std::int64_t i = 0; i < d; ++i) {
        logits[static_cast<std::size_t>(t * experts + e)] +=
            static_cast<double>(x(t, i)) * layer.routerWeights()(i, e);
      }
    }
  }
  return logits;
}

inline RowMatrix randomTokens(std::int64_t tokens, std::int64_t d, std::uint64_t seed) {
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  RowMatrix x(tokens, d);
  for (std::int64_t i = 0; i < x.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x.data()[i] = static_cast<float>(static_cast<std::int64_t>(state >> 40) - (1 << 23)) /
                  static_cast<float>(1 << 23);  // uniform in [-1, 1)
  }
  return x;
}

}  // namespace moe::test
