// The support library checked on itself: EXPECT_ROUTE_MATCH passes a correct router, fails a
// router whose output was tampered with (slots swapped, a gate off, a displaced expert kept)
// with the judge's explanation, and EXPECT_ROUTE_MATCH_EXACTLY refuses a near-tie the judge
// accepts. The seed: MOE_TEST_SEED's parsing and one stream per test.
#include "moe/test/route_match.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moe/fuzz/router.hpp"
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
  // The token is described: its logits in decimal and hex, and the router's slots.
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "[5] 4 (0x40800000)");
  EXPECT_NONFATAL_FAILURE(EXPECT_ROUTE_MATCH(bad, clearCase()), "[0] id 5 gate");
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
