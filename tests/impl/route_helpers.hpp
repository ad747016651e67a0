// What the impl suites share besides the router list: a call that fails loudly, logits clear
// of near-ties, and the binary32 ulp. Whether an output is right is the judge's to say
// (EXPECT_ROUTE_MATCH of tests/support, judged_router.hpp), not a reference written here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/routers.hpp"

namespace moe::test {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> gates;
};

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
