// A plain double-precision reference for the routers, written here and not taken from
// oracle/ (the differential checks against the oracle belong to fuzz/).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "moe/routers.hpp"

namespace moe::test {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> gates;
};

// One row's reference: kept experts best first (exact ties -> lower index) on the double
// probabilities (probs mode) or the logits (logits mode), and their gates in double.
struct RowReference {
  std::vector<int32_t> ids;
  std::vector<double> gates;
};

inline std::vector<int32_t> rankOrder(const std::vector<double>& score) {
  std::vector<int32_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return score[a] > score[b]; });
  return order;
}

inline RowReference referenceRow(const float* x, int32_t experts, int32_t k, bool probsMode) {
  const int32_t kk = std::min(k, experts);
  std::vector<double> xs(x, x + experts);
  const double m = *std::max_element(xs.begin(), xs.end());
  std::vector<double> e(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) e[i] = std::exp(xs[i] - m);
  // Probabilities and logits order the experts alike over the reals; ranking on e
  // (probs) or x (logits) differs only where float rounding ties them.
  const std::vector<int32_t> order = rankOrder(probsMode ? e : xs);
  RowReference ref;
  double keptSum = 0;
  for (int32_t s = 0; s < kk; ++s) keptSum += e[order[s]];
  for (int32_t s = 0; s < kk; ++s) {
    ref.ids.push_back(order[s]);
    ref.gates.push_back(e[order[s]] / keptSum);
  }
  return ref;
}

inline Routed routeOrDie(const BuiltinRouter& router, int32_t tokens, int32_t experts, int32_t k,
                         const std::vector<float>& logits, int32_t threads = 1) {
  Routed out{std::vector<int32_t>(size_t(tokens) * k, -7),
             std::vector<float>(size_t(tokens) * k, -7)};
  const int rc =
      router.route(tokens, experts, k, logits.data(), out.ids.data(), out.gates.data(), threads);
  if (rc != 0) throw std::runtime_error("route failed with " + std::to_string(rc));
  return out;
}

// Logits whose real-number ranking is far from any float tie: a random permutation of
// evenly spaced values (spacing keeps probabilities clear of underflow), plus small noise.
inline std::vector<float> separatedRow(std::mt19937& rng, int32_t experts) {
  const double spacing = std::min(0.05, 60.0 / experts);
  std::vector<int32_t> perm(experts);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::uniform_real_distribution<double> noise(-0.1 * spacing, 0.1 * spacing);
  std::uniform_real_distribution<double> shift(-20, 20);
  const double base = shift(rng);
  std::vector<float> row(experts);
  for (int32_t i = 0; i < experts; ++i) row[i] = float(base + perm[i] * spacing + noise(rng));
  return row;
}

inline double ulp32(double exact) {
  const double a = std::fabs(exact);
  if (a < 0x1p-126) return 0x1p-149;
  return std::ldexp(1.0, std::ilogb(a) - 23);
}

}  // namespace moe::test
