// The support library checked on itself: EXPECT_ROUTE_MATCH passes a correct router, fails a
// router whose output was tampered with (slots swapped, a gate off, a displaced expert kept)
// with the judge's explanation, and EXPECT_ROUTE_MATCH_EXACTLY refuses a near-tie the judge
// accepts. The seed: MOE_TEST_SEED's parsing and one stream per test.
#include "moe/test/route_match.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/test/kernel_router.hpp"
#include "moe/test/seed.hpp"

namespace moe::test {
namespace {

using Tamper = std::function<void(int32_t k, std::vector<int32_t>& ids, std::vector<float>& gates)>;

// A built-in router whose output is changed after the call: a planted bug.
class TamperedRouter final : public fuzz::Router {
 public:
  TamperedRouter(std::unique_ptr<fuzz::Router> inner, Tamper tamper)
      : Router(inner->name() + "+tampered", inner->contract()),
        inner_(std::move(inner)),
        tamper_(std::move(tamper)) {}

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t threads) const override {
    const size_t n = static_cast<size_t>(tokens) * static_cast<size_t>(experts);
    fuzz::RouteOutput o = inner_->route(tokens, experts, k, {logits, n}, threads);
    if (o.abstained || o.fault) return 4;  // MOE_ROUTE_EUNSUPPORTED
    tamper_(k, o.ids, o.gates);
    std::copy(o.ids.begin(), o.ids.end(), ids);
    std::copy(o.gates.begin(), o.gates.end(), gates);
    return 0;
  }

 private:
  std::unique_ptr<fuzz::Router> inner_;
  Tamper tamper_;
};

// Two tokens of 8 logits, far apart (no near-tie); best experts 5, 2, 7 and 6, 1, 4.
fuzz::Case clearCase() {
  return routeCase(2, 8, 3,
                   {0.0f, -1.0f, 2.0f, -3.0f, 0.5f, 4.0f, -2.0f, 1.0f,  //
                    1.0f, 3.0f, -1.0f, 0.0f, 2.0f, -2.0f, 5.0f, -4.0f});
}

TEST(RouteMatch, PassesACorrectRouter) {
  for (const char* name : {"scalar-probs", "scalar-logits"}) {
    const auto router = fuzz::openRouter(name);
    EXPECT_ROUTE_MATCH(*router, clearCase());
    EXPECT_ROUTE_MATCH_EXACTLY(*router, clearCase());
  }
}

TEST(RouteMatch, FailsSwappedSlotsWithTheJudgesExplanation) {
  for (const char* name : {"scalar-probs", "scalar-logits"}) {
    const TamperedRouter bad(fuzz::openRouter(name), [](int32_t k, auto& ids, auto& gates) {
      std::swap(ids[k], ids[k + 1]);  // token 1, slots 0 and 1
      std::swap(gates[k], gates[k + 1]);
    });
    EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()),
                            "token 1: violation slot-order\n  why: order: expert 6 in slot 1");
  }
}

TEST(RouteMatch, FailsAGateOffByAThousandth) {
  const TamperedRouter bad(fuzz::openRouter("scalar-probs"),
                           [](int32_t, auto&, auto& gates) { gates[1] *= 1.001f; });
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()),
                          "token 0: violation gate-error\n  why: slot 1 (expert 2)");
  // The token told as `moe-oracle explain` tells it (token_text.hpp): the table of its
  // experts (logit in hex, the spec's decision) and the exact gates of the router's kept set.
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "token 0 of 2:\nE = 8, k = 3");
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "0x40800000");
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "gates of the router's kept set");
}

TEST(RouteMatch, FailsADisplacedExpertKept) {
  const TamperedRouter bad(fuzz::openRouter("scalar-logits"),
                           [](int32_t k, auto& ids, auto&) { ids[k - 1] = 3; });
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "token 0: violation kept-set");
}

// docs/design.md §1's near-tie: logits 0 and 2^-30 have one binary32 probability, so a
// router on probabilities keeps expert 0. The judge accepts that as a near-tie; _EXACTLY,
// meant for inputs built clear of near-ties, does not.
TEST(RouteMatch, ExactlyRefusesANearTieTheJudgeAccepts) {
  const auto router = fuzz::openRouter("scalar-probs");
  const fuzz::Case c = routeCase(1, 2, 1, {0.0f, 0x1p-30f});
  EXPECT_ROUTE_MATCH(*router, c);
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH_EXACTLY(*router, c),
                          "token 0: acceptable only as near-tie-probabilities");
}

TEST(RouteMatch, NonRealRowsAreNotHeldToAnExactDecision) {
  const auto router = fuzz::openRouter("scalar-probs");
  EXPECT_ROUTE_MATCH_EXACTLY(*router, routeCase(1, 3, 2, {1.0f, NAN, 2.0f}));
}

// A kernel of the test program (kernelRouter): top-k on the logits, ties to the lower index,
// the softmax of the kept ones; with `overAll`, the softmax's sum runs over every expert.
template <bool overAll>
int topkSoftmax(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                float* gates) {
  if (tokens < 0 || experts < 0 || k < 0) return 1;  // MOE_ROUTE_EBADSIZE
  const int32_t n = std::min(k, experts);
  std::vector<int32_t> order(static_cast<size_t>(experts));
  for (int32_t t = 0; t < tokens; ++t) {
    const float* x = logits + static_cast<size_t>(t) * experts;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
    float sum = 0.0f;
    for (int32_t e = 0; e < (overAll ? experts : n); ++e)
      sum += std::exp(x[order[e]] - x[order[0]]);
    for (int32_t s = 0; s < k; ++s) {
      ids[t * k + s] = s < n ? order[s] : -1;
      gates[t * k + s] = s < n ? std::exp(x[order[s]] - x[order[0]]) / sum : 0.0f;
    }
  }
  return 0;
}

constexpr const char* kTopkContract = R"({"selects_on": "logits", "slot_order": "rank"})";

TEST(KernelRouter, PassesACorrectKernelFunction) {
  const auto router = kernelRouter("topk", &topkSoftmax<false>, kTopkContract);
  EXPECT_EQ(router->name(), "topk");
  EXPECT_ROUTE_MATCH_EXACTLY(*router, clearCase());
  EXPECT_ROUTE_MATCH(*router, routeCase(1, 3, 5, {0.25f, 0.5f, -0.5f}));  // k > E
}

TEST(KernelRouter, FailsAKernelFunctionWithAPlantedBug) {
  const auto router = kernelRouter("topk-over-all", &topkSoftmax<true>, kTopkContract);
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(*router, clearCase()),
                          "router topk-over-all on T = 2, E = 8, k = 3");
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(*router, clearCase()), "token 0: violation gate-");
}

TEST(KernelRouter, RefusesABadContractOrANullKernel) {
  EXPECT_THROW(kernelRouter("x", &topkSoftmax<false>, R"({"slot-order": "rank"})"),
               std::invalid_argument);
  EXPECT_THROW(kernelRouter("x", &topkSoftmax<false>, R"({"abi": "moe_route_v2"})"),
               std::invalid_argument);
  EXPECT_THROW(kernelRouter("x", nullptr), std::invalid_argument);
}

// The family form: a moe_route_v2 case judged against the family's spec, here a built-in
// router's v2 kernel, and the same kernel with its first gate off by 1%.
class TamperedV2Router final : public fuzz::Router {
 public:
  explicit TamperedV2Router(std::unique_ptr<fuzz::Router> inner)
      : Router(inner->name() + "+tampered", inner->contract()), inner_(std::move(inner)) {}

 protected:
  int call(int32_t, int32_t, int32_t, const float*, int32_t*, float*, int32_t) const override {
    return 4;  // MOE_ROUTE_EUNSUPPORTED: the family's cases only
  }
  int callV2(const fuzz::Family& family, int32_t tokens, int32_t experts, int32_t k,
             const float* logits, int32_t* ids, float* gates, int32_t threads,
             fuzz::RouteFault&) const override {
    const size_t n = static_cast<size_t>(tokens) * static_cast<size_t>(experts);
    fuzz::RouteOutput o = inner_->route(tokens, experts, k, {logits, n}, threads, &family);
    if (o.abstained || o.fault) return 4;
    o.gates[0] *= 1.01f;
    std::copy(o.ids.begin(), o.ids.end(), ids);
    std::copy(o.gates.begin(), o.gates.end(), gates);
    return 0;
  }

 private:
  std::unique_ptr<fuzz::Router> inner_;
};

std::unique_ptr<fuzz::Router> builtInV2(const char* name) {
  fuzz::RouterOptions v2;
  v2.abi = std::string(fuzz::kAbiV2);
  return fuzz::openRouter(name, v2);
}

fuzz::Case sigmoidCase() {
  fuzz::Family f;
  f.score = 1;  // MOE_SCORE_SIGMOID
  f.groups = 4;
  f.topkGroups = 2;
  return familyCase(1, 8, 2, {0.0f, 1.0f, 2.5f, -1.0f, 0.5f, 3.0f, -2.0f, 1.5f}, f);
}

TEST(RouteMatchFamily, PassesABuiltInV2Kernel) {
  const auto router = builtInV2("scalar-probs");
  ASSERT_TRUE(router->contract().v2());
  EXPECT_ROUTE_MATCH_EXACTLY(*router, sigmoidCase());
}

TEST(RouteMatchFamily, FailsItsTamperedGateWithTheFamilysExplanation) {
  const TamperedV2Router bad(builtInV2("scalar-probs"));
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, sigmoidCase()), "token 0: violation gate-");
  // The family's table: its parameters and the groups the spec keeps.
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, sigmoidCase()), "sigmoid");
}

TEST(TestSeed, ParsesDecimalOnly) {
  EXPECT_EQ(parseTestSeed("0"), 0u);
  EXPECT_EQ(parseTestSeed("18446744073709551615"), 18446744073709551615u);
  for (const char* bad : {"", "0x10", "-1", "12a", " 1", "18446744073709551616"}) {
    EXPECT_THROW(parseTestSeed(bad), std::invalid_argument) << '"' << bad << '"';
  }
}

TEST(TestSeed, OneStreamPerTestAndRun) {
  std::mt19937 a = testRng(), b = testRng();
  EXPECT_EQ(a(), b());  // the same test draws the same stream
  const char* env = std::getenv("MOE_TEST_SEED");
  EXPECT_EQ(testSeed(), env != nullptr ? parseTestSeed(env) : kDefaultTestSeed);
}

TEST(TestSeed, OtherTestsDrawOtherStreams) {
  // The salt of this test's name differs from OneStreamPerTestAndRun's.
  const std::uint64_t here = currentTestSalt();
  EXPECT_NE(here, 0u);
  static std::uint64_t first = 0;
  if (first == 0) first = here;
  EXPECT_EQ(first, currentTestSalt());
}

}  // namespace
}  // namespace moe::test
