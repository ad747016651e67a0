// The contract's gate_budget, tested as claimed: for each gate g of the router's own kept
// set, |g - exact| <= spec32_factor * |g_spec32 - exact| + ulp * ulp32(exact), where
// exact is computed here in long double and g_spec32 is the scalar router of the same
// mode (scalar-probs is the binary32 evaluation of gatesVecSpec). Also checks that
// scalar-probs is bitwise a binary32 transliteration of softmaxVecSpec / gatesVecSpec.
// The judge holds every gate to the same claim (EXPECT_ROUTE_MATCH, used by the other
// suites); this one measures how close each router comes to it and prints the worst excess.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "moe/routers.hpp"
#include "moe/test/seed.hpp"
#include "route_helpers.hpp"
#include "router_params.hpp"

namespace moe::test {
namespace {

struct Budget {
  double factor;
  double ulp;
};

Budget budgetOf(const BuiltinRouter& router) {
  const auto j = nlohmann::json::parse(router.contract_json)["gate_budget"];
  return {j["spec32_factor"].get<double>(), j["ulp"].get<double>()};
}

// Exact (long double) gates of a given kept set: exp(x_e - m) / sum over the set.
std::vector<long double> exactGates(const float* x, int32_t experts, const int32_t* ids,
                                    int32_t kk) {
  long double m = x[0];
  for (int32_t i = 1; i < experts; ++i) m = std::max<long double>(m, x[i]);
  long double sum = 0;
  std::vector<long double> e(static_cast<size_t>(kk));
  for (int32_t s = 0; s < kk; ++s) {
    e[s] = std::exp(static_cast<long double>(x[ids[s]]) - m);
    sum += e[s];
  }
  for (auto& v : e) v /= sum;
  return e;
}

class GateBudget : public RouterTest {
 protected:
  void SetUp() override {
    RouterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    spec32_ = findRouter(probsMode() ? "scalar-probs" : "scalar-logits");
  }
  const BuiltinRouter* spec32_ = nullptr;
};

// Gaussian logits at three spreads. The claimed ulp covers the exps and divisions and
// a kept sum of up to 8 terms; for larger k the sum's (k - 1) u per side (the analytic
// floor of the verdict code) is added, giving the derived bound 3 (kk + 5) ulp.
TEST_P(GateBudget, GatesStayInsideTheClaimedBudget) {
  const Budget budget = budgetOf(*router_);
  std::mt19937 rng = testRng();
  double worstExcess = 0;
  int64_t gatesChecked = 0;
  for (const float sigma : {1.0f, 4.0f, 16.0f}) {
    std::normal_distribution<float> logit(0.0f, sigma);
    for (const int32_t experts : {8, 64, 256}) {
      for (const int32_t k : {1, 2, 8, 32}) {
        const int32_t tokens = 200;
        std::vector<float> x(size_t(tokens) * experts);
        for (auto& v : x) v = logit(rng);
        const Routed mine = routeOrDie(*router_, tokens, experts, k, x);
        const Routed spec = routeOrDie(*spec32_, tokens, experts, k, x);
        const int32_t kk = std::min(k, experts);
        const double ulps = std::max(budget.ulp, 3.0 * (kk + 5));
        for (int32_t t = 0; t < tokens; ++t) {
          const size_t at = size_t(t) * k;
          // Compare with the spec's gates only where both kept the same set in the same
          // order (a near-tie may legitimately swap; the fuzzer's verdicts judge those).
          if (!std::equal(&mine.ids[at], &mine.ids[at] + kk, &spec.ids[at])) continue;
          const auto exact = exactGates(&x[size_t(t) * experts], experts, &mine.ids[at], kk);
          for (int32_t s = 0; s < kk; ++s) {
            const double ex = double(exact[s]);
            const double mineErr = std::fabs(double(mine.gates[at + s]) - ex);
            const double specErr = std::fabs(double(spec.gates[at + s]) - ex);
            // Probabilities below 2^-126 lose relative accuracy: an absolute floor.
            const double floor = experts * 0x1p-148;
            const double allowed = budget.factor * specErr + ulps * ulp32(ex) + floor;
            worstExcess = std::max(worstExcess, (mineErr - budget.factor * specErr) / ulp32(ex));
            ++gatesChecked;
            ASSERT_LE(mineErr, allowed) << GetParam() << " sigma=" << sigma << " E=" << experts
                                        << " k=" << k << " t=" << t << " s=" << s;
          }
        }
      }
    }
  }
  std::printf("%s: %lld gates, worst (|g-exact| - %g |g32-exact|) = %.2f ulp (claim %g)\n",
              GetParam().c_str(), static_cast<long long>(gatesChecked), budget.factor, worstExcess,
              budget.ulp);
  EXPECT_GT(gatesChecked, 10000);
}

INSTANTIATE_TEST_SUITE_P(AllRouters, GateBudget, allBuiltinRouters(), routerTestName);

// softmaxVecSpec then gatesVecSpec in binary32, transliterated from docs/design.md §1.
std::vector<float> gatesVecSpec32(const std::vector<float>& x, int32_t k) {
  const size_t n = x.size();
  float m = x[0];
  for (size_t i = 1; i < n; ++i) m = (m <= x[i]) ? x[i] : m;  // Lean's max
  std::vector<float> p(n);
  float d = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    p[i] = std::exp(x[i] - m);
    d = d + p[i];
  }
  for (size_t i = 0; i < n; ++i) p[i] = p[i] / d;
  std::vector<bool> kept(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t rank = 0;  // number of j that beat i
    for (size_t j = 0; j < n; ++j) rank += p[j] > p[i] || (j < i && !(p[i] > p[j]));
    kept[i] = rank < k;
  }
  float keptSum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) keptSum = keptSum + p[i];
  }
  std::vector<float> g(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) g[i] = p[i] / keptSum;
  }
  return g;
}

TEST(ScalarProbs, IsBitwiseTheBinary32Spec) {
  std::mt19937 rng = testRng();
  const BuiltinRouter& router = *findRouter("scalar-probs");
  for (const float sigma : {0.5f, 8.0f, 40.0f}) {
    std::normal_distribution<float> logit(0.0f, sigma);
    for (const int32_t experts : {1, 3, 8, 64, 100}) {
      for (const int32_t k : {1, 2, 8}) {
        std::vector<float> x(static_cast<size_t>(experts));
        for (int trial = 0; trial < 20; ++trial) {
          for (auto& v : x) v = logit(rng);
          if (trial % 5 == 0 && experts > 2) x[1] = x[2];  // an exact tie
          const Routed out = routeOrDie(router, 1, experts, k, x);
          const std::vector<float> g = gatesVecSpec32(x, k);
          for (int32_t s = 0; s < std::min(k, experts); ++s) {
            const int32_t id = out.ids[s];
            ASSERT_GE(id, 0);
            ASSERT_EQ(std::bit_cast<uint32_t>(out.gates[s]), std::bit_cast<uint32_t>(g[id]))
                << "E=" << experts << " k=" << k << " slot " << s;
          }
          int32_t keptBySpec = 0;
          for (float v : g) keptBySpec += v != 0.0f;
          int32_t nonzeroOut = 0;
          for (int32_t s = 0; s < std::min(k, experts); ++s) nonzeroOut += out.gates[s] != 0.0f;
          ASSERT_EQ(nonzeroOut, keptBySpec);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moe::test
