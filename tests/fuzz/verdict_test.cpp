// The verdict, tested both ways (docs/design.md §3): the binary32 spec always passes its
// budgets; a router with 1e-3 relative gate error, one that keeps an expert beaten far
// past the budget, one that breaks an exact tie upwards, must fail with the right kind.
#include "moe/fuzz/verdict.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {
namespace {

using Fn = std::function<int(int32_t, int32_t, int32_t, const float*, int32_t*, float*)>;

// A router made from a lambda, with a chosen contract.
class LambdaRouter : public Router {
 public:
  LambdaRouter(std::string name, Contract c, Fn fn)
      : Router(std::move(name), std::move(c)), fn_(std::move(fn)) {}

 protected:
  int call(int32_t t, int32_t e, int32_t k, const float* x, int32_t* ids, float* g,
           int32_t) const override {
    return fn_(t, e, k, x, ids, g);
  }

 private:
  Fn fn_;
};

Contract probsContract() {
  Contract c;
  c.selectsOn = SelectsOn::kProbabilities;
  c.slotOrder = SlotOrder::kRank;
  c.batchInvariant = true;
  return c;
}

Contract logitsContract() {
  Contract c = probsContract();
  c.selectsOn = SelectsOn::kLogits;
  return c;
}

// The spec32 router's output, then `edit` applied to it.
Fn spec32Then(
    const std::function<void(int32_t k, int32_t* ids, float* gates, int32_t tokens)>& edit) {
  return [edit](int32_t t, int32_t e, int32_t k, const float* x, int32_t* ids, float* g) {
    static auto spec = makeSpec32Router();
    RouteOutput o = spec->route(t, e, k, std::span<const float>(x, size_t(t) * e), 1);
    if (o.abstained) return 1;
    std::copy(o.ids.begin(), o.ids.end(), ids);
    std::copy(o.gates.begin(), o.gates.end(), g);
    edit(k, ids, g, t);
    return 0;
  };
}

Verdict judgeOne(std::vector<float> x, int32_t k, std::vector<int32_t> ids,
                 std::vector<float> gates, const Contract& c) {
  LevelCounters levels;
  return judgeToken(x, k, ids, gates, c, VerdictConfig{}, levels);
}

TEST(VerdictBothWays, Binary32SpecNeverViolates) {
  auto spec = makeSpec32Router();
  SeededSource src(424242);
  std::printf("seed 424242\n");
  LevelCounters levels;
  int judged = 0, acceptable = 0;
  for (int n = 0; n < 400; ++n) {
    Case c = decodeCase(src);
    CaseResult r = judgeCase(*spec, c, VerdictConfig{}, levels);
    if (r.abstained) continue;
    ++judged;
    ASSERT_FALSE(r.violation) << kindName(r.violation->kind) << ": " << r.violation->certificate
                              << "\ncase " << caseToJSON(c).dump();
    acceptable += r.worst() == Outcome::kAcceptable;
  }
  EXPECT_GT(judged, 300);
  EXPECT_GT(acceptable, 0);  // near-ties were exercised, not only easy cases
}

TEST(VerdictBothWays, DesignNearTieZeroVersusTwoToMinus30) {
  // docs/design.md §1: in binary32 the logits 0 and 2^-30 have the same probability.
  std::vector<float> x = {0.0f, 0x1p-30f};
  Verdict probs = judgeOne(x, 1, {0}, {1.0f}, probsContract());
  EXPECT_EQ(probs.outcome, Outcome::kAcceptable);
  EXPECT_EQ(probs.reason, "near-tie-probabilities");
  Verdict logits = judgeOne(x, 1, {0}, {1.0f}, logitsContract());
  EXPECT_EQ(logits.outcome, Outcome::kViolation);
  EXPECT_EQ(kindName(logits.kind), "kept-set");
  EXPECT_EQ(judgeOne(x, 1, {1}, {1.0f}, logitsContract()).outcome, Outcome::kExact);
}

TEST(VerdictBothWays, ExactTiesGoToTheLowerIndexInEveryMode) {
  for (const Contract& c : {probsContract(), logitsContract()}) {
    Verdict equal = judgeOne({1.0f, 1.0f, -3.0f}, 1, {1}, {1.0f}, c);
    EXPECT_EQ(kindName(equal.kind), "tie-higher-index");
    Verdict zeros = judgeOne({0.0f, -0.0f}, 1, {1}, {1.0f}, c);
    EXPECT_EQ(kindName(zeros.kind), "tie-higher-index") << "+0 and -0 tie";
    Verdict zeros2 = judgeOne({-0.0f, 0.0f}, 1, {1}, {1.0f}, c);
    EXPECT_EQ(kindName(zeros2.kind), "tie-higher-index") << "-0 and +0 tie";
    EXPECT_EQ(judgeOne({0.0f, -0.0f}, 1, {0}, {1.0f}, c).outcome, Outcome::kExact);
    // Order inside the kept set, rank order promised: tied experts lower index first.
    Verdict order = judgeOne({2.0f, 2.0f}, 2, {1, 0}, {0.5f, 0.5f}, c);
    EXPECT_EQ(kindName(order.kind), "tie-higher-index");
  }
}

// Tie policy "any" (torch.topk, std::sort kernels): every order of exactly equal scores is
// acceptable, with the reason tie-order; everything else is judged as under the spec.
TEST(VerdictTiePolicy, AnyAcceptsEveryOrderOfExactTiesOnly) {
  for (Contract c : {probsContract(), logitsContract()}) {
    c.tieOrder = TieOrder::kAny;
    Verdict set = judgeOne({1.0f, 1.0f, -3.0f}, 1, {1}, {1.0f}, c);
    EXPECT_EQ(set.outcome, Outcome::kAcceptable);
    EXPECT_EQ(set.reason, "tie-order");
    EXPECT_EQ(judgeOne({0.0f, -0.0f}, 1, {1}, {1.0f}, c).reason, "tie-order") << "-0 == +0";
    Verdict order = judgeOne({2.0f, 2.0f}, 2, {1, 0}, {0.5f, 0.5f}, c);
    EXPECT_EQ(order.outcome, Outcome::kAcceptable);
    EXPECT_EQ(order.reason, "tie-order");
    // Not a tie: the kept set must still be one the spec keeps under some tie order.
    Verdict beaten = judgeOne({1.0f, 1.0f, 5.0f}, 1, {1}, {1.0f}, c);
    EXPECT_EQ(beaten.outcome, Outcome::kViolation);
    EXPECT_NE(kindName(beaten.kind), "tie-higher-index");
    // Gates are still judged, against the experts actually kept.
    EXPECT_EQ(kindName(judgeOne({1.0f, 1.0f, -3.0f}, 1, {1}, {0.5f}, c).kind), "gate-error");
  }
  // --tie-order overrides the contract both ways.
  Contract any = probsContract();
  any.tieOrder = TieOrder::kAny;
  VerdictConfig strict;
  strict.tieOrder = TieOrder::kLowestIndex;
  LevelCounters levels;
  std::vector<float> x = {1.0f, 1.0f, -3.0f};
  std::vector<int32_t> ids = {1};
  std::vector<float> g = {1.0f};
  EXPECT_EQ(kindName(judgeToken(x, 1, ids, g, any, strict, levels).kind), "tie-higher-index");
}

// The kind names the cause: a kept set that is wrong where the scores are not tied is not
// reported as a tie, even when a tie at the boundary is also broken upwards.
TEST(VerdictTiePolicy, AWrongSetIsNotReportedAsATie) {
  // Experts 0 and 1 tie; expert 3 (0.5) is kept although expert 2 (4) is far above it.
  const std::vector<float> x = {1.0f, 1.0f, 4.0f, 0.5f};
  for (const Contract& c : {probsContract(), logitsContract()}) {
    Verdict v = judgeOne(x, 3, {1, 3, 0}, {0.3f, 0.3f, 0.4f}, c);
    EXPECT_EQ(v.outcome, Outcome::kViolation);
    EXPECT_TRUE(kindName(v.kind) == "kept-set" || kindName(v.kind) == "beaten-kept")
        << kindName(v.kind) << ": " << v.certificate;
  }
  // A tie certificate carries the router's own gates of the tied experts.
  Verdict tie = judgeOne({2.0f, 2.0f}, 2, {1, 0}, {0.5f, 0x1.000002p-1f}, probsContract());
  EXPECT_EQ(kindName(tie.kind), "tie-higher-index");
  EXPECT_NE(tie.certificate.find("ulp apart"), std::string::npos) << tie.certificate;
}

TEST(VerdictBothWays, ExpertBeatenFarPastTheBudgetIsCaught) {
  Verdict v = judgeOne({0.0f, 1.0f, -5.0f}, 1, {0}, {1.0f}, probsContract());
  EXPECT_EQ(v.outcome, Outcome::kViolation);
  EXPECT_EQ(kindName(v.kind), "beaten-kept");
  EXPECT_GT(v.margin, 1e3);
  // 1 ulp apart at 1 (2^-23): p_1 - p_0 ~ 2^-24 ~ 6e-8 < b_0 + b_1 ~ 2 * 12 u / 2 ~ 7.2e-7.
  Verdict near = judgeOne({1.0f, nextUp(1.0f)}, 1, {0}, {1.0f}, probsContract());
  EXPECT_EQ(near.outcome, Outcome::kAcceptable) << near.certificate;
  // 1 ulp apart at 16 (2^-19): p_1 - p_0 ~ 2^-20 ~ 9.5e-7 > 7.2e-7: binary32 tells them
  // apart (expf(-2^-19) < 1), so a router that keeps the smaller one is wrong.
  near = judgeOne({16.0f, nextUp(16.0f)}, 1, {0}, {1.0f}, probsContract());
  EXPECT_EQ(kindName(near.kind), "beaten-kept");
  near = judgeOne({16.0f, nextUp(16.0f)}, 1, {1}, {1.0f}, probsContract());
  EXPECT_EQ(near.outcome, Outcome::kExact) << near.certificate;
  Verdict far = judgeOne({16.0f, 16.01f}, 1, {0}, {1.0f}, probsContract());
  EXPECT_EQ(kindName(far.kind), "beaten-kept");
}

TEST(VerdictBothWays, RelativeGateErrorOf1e3IsCaught) {
  LambdaRouter sloppy("sloppy", probsContract(),
                      spec32Then([](int32_t k, int32_t*, float* g, int32_t t) {
                        for (int32_t i = 0; i < k * t; ++i) g[i] *= 1.001f;
                      }));
  SeededSource src(99);
  LevelCounters levels;
  int caught = 0, eligible = 0;
  for (int n = 0; n < 300; ++n) {
    Case c = decodeCase(src);
    c.tokens = 1;
    c.logits.resize(c.experts);
    if (c.k == 0 || !isRealRow(c.row(0))) continue;
    ++eligible;
    CaseResult r = judgeCase(sloppy, c, VerdictConfig{}, levels);
    if (r.violation && kindName(r.violation->kind) == "gate-error") ++caught;
  }
  EXPECT_GT(eligible, 100);
  EXPECT_EQ(caught, eligible) << "every real row has a gate >= 1/k, so 1e-3 must be caught";
}

TEST(VerdictBothWays, GateBudgetIsConfigurable) {
  // A 1-ulp-off gate on [0, 0] k = 2: 0.5 -> nextUp(0.5).
  std::vector<float> x = {0.0f, 0.0f};
  std::vector<int32_t> ids = {0, 1};
  std::vector<float> off = {nextUp(0.5f), 0.5f};
  LevelCounters levels;
  VerdictConfig lenient;
  EXPECT_NE(judgeToken(x, 2, ids, off, probsContract(), lenient, levels).outcome,
            Outcome::kViolation);
  VerdictConfig strict;
  strict.gateUlp = 0;
  strict.gateFactor = 0;
  strict.analyticFloor = false;
  Verdict v = judgeToken(x, 2, ids, off, probsContract(), strict, levels);
  EXPECT_EQ(kindName(v.kind), "gate-error");
}

TEST(VerdictStructure, EachBrokenShapeHasItsKind) {
  const Contract c = probsContract();
  EXPECT_EQ(kindName(judgeOne({1, 2, 3}, 2, {2, 2}, {0.5f, 0.5f}, c).kind), "id-repeated");
  EXPECT_EQ(kindName(judgeOne({1, 2, 3}, 2, {2, 3}, {0.5f, 0.5f}, c).kind), "id-out-of-range");
  EXPECT_EQ(kindName(judgeOne({1, 2, 3}, 2, {2, -1}, {1.0f, 0.0f}, c).kind), "slot-count");
  EXPECT_EQ(kindName(judgeOne({1, 2}, 3, {1, 0, 0}, {0.7f, 0.3f, 0.0f}, c).kind), "empty-slot");
  EXPECT_EQ(kindName(judgeOne({1, 2}, 3, {1, 0, -1}, {0.7f, 0.3f, 0.5f}, c).kind), "empty-slot");
  EXPECT_EQ(kindName(judgeOne({1, 2}, 3, {1, 0, 2}, {0.7f, 0.3f, 0.0f}, c).kind),
            "id-out-of-range");
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(kindName(judgeOne({1, 2}, 1, {1}, {nan}, c).kind), "gate-nonfinite");
  EXPECT_EQ(kindName(judgeOne({1, 2}, 1, {1}, {-1.0f}, c).kind), "gate-nonfinite");
}

TEST(VerdictStructure, NonRealRowsGetStructureChecksOnly) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Contract c = probsContract();
  Verdict v = judgeOne({inf, 1.0f}, 1, {1}, {nan}, c);
  EXPECT_EQ(v.outcome, Outcome::kAcceptable);
  EXPECT_EQ(v.reason, "nonreal-row");
  EXPECT_EQ(judgeOne({-inf, -inf}, 1, {1}, {nan}, c).reason, "nonreal-row");
  EXPECT_EQ(kindName(judgeOne({nan, 1.0f}, 2, {0, 0}, {nan, nan}, c).kind), "id-repeated");
  EXPECT_EQ(kindName(judgeOne({nan, 1.0f}, 1, {5}, {nan}, c).kind), "id-out-of-range");
}

TEST(VerdictBatch, OutputThatChangesWithTheBatchIsCaught) {
  LambdaRouter variant("variant", probsContract(),
                       spec32Then([](int32_t k, int32_t*, float* g, int32_t t) {
                         if (t > 1) {  // only when batched, and still inside the gate budget
                           for (int32_t i = 0; i < k * t; ++i) g[i] = nextUp(g[i]);
                         }
                       }));
  Case c;
  c.tokens = 3;
  c.experts = 4;
  c.k = 2;
  c.split = 1;
  c.logits = {1, 2, 3, 4, 0, 0, 1, 0, -1, 5, 2, 2};
  LevelCounters levels;
  for (uint8_t v : {0, 16}) {  // the rerun alone, then the split batch
    c.variant = v;
    CaseResult r = judgeCase(variant, c, VerdictConfig{}, levels);
    ASSERT_TRUE(r.violation) << "variant " << int(v);
    EXPECT_EQ(kindName(r.violation->kind), "batch-variance");
  }
  // The same router without the claim is not held to it.
  Contract noClaim = probsContract();
  noClaim.batchInvariant = false;
  LambdaRouter honest("honest", noClaim, spec32Then([](int32_t, int32_t*, float* g, int32_t t) {
                        if (t > 1) g[0] = nextUp(g[0]);
                      }));
  EXPECT_FALSE(judgeCase(honest, c, VerdictConfig{}, levels).violation);
}

TEST(VerdictBudgets, FormulasMatchDocsFuzzMd) {
  // b = (|x - m| + 2E + 4c + 4) u p + (c + 2) 2^-149
  EXPECT_DOUBLE_EQ(probabilityBudget(0.5, 3.0, 8, 1.0),
                   (3 + 16 + 4 + 4) * 0x1p-24 * 0.5 + 3 * 0x1p-149);
  EXPECT_DOUBLE_EQ(probabilityBudget(0.0, 1e30, 8, 1.0), 3 * 0x1p-149);
  EXPECT_DOUBLE_EQ(gateFloor(0.25, 1, 2, 2, 4, 1),
                   (1 + 2 + 4 + 4 + 8) * 0x1p-24 * 0.25 + 5.0 * 3 * 3 * 0x1p-149);
}

TEST(VerdictLevels, FastPathDecidesEasyCases) {
  LevelCounters levels;
  judgeOne({0.0f, 5.0f, -1.0f}, 2, {1, 0}, {0.99330717f, 0.0066928510f}, probsContract());
  std::vector<float> x = {0.0f, 5.0f, -1.0f};
  std::vector<int32_t> ids = {1, 0};
  std::vector<float> g = {0.99330717f, 0.0066928510f};
  Verdict v = judgeToken(x, 2, ids, g, probsContract(), VerdictConfig{}, levels);
  EXPECT_EQ(v.outcome, Outcome::kExact) << v.certificate;
  EXPECT_EQ(levels.selectionFloat, 1u);
  EXPECT_EQ(levels.selectionCertified, 0u);
  EXPECT_EQ(levels.gateCertified, 0u);
}

}  // namespace
}  // namespace moe::fuzz

namespace moe::fuzz {
namespace {

TEST(VerdictLevels, ABoundaryGateGoesToTheCertifiedLevel) {
  // [0, 0], k = 2: the exact gates are 1/2. Budget = 1 ulp32(1/2) = 2^-24 only, and the
  // router's gate is exactly 2^-24 away: the binary64 filter cannot decide (its own error
  // straddles the boundary), so MPFR decides (or, if even that is too wide, the router gets
  // the benefit, counted as undecided). Never a violation: |g - G| <= budget holds exactly.
  std::vector<float> x = {0.0f, 0.0f};
  std::vector<int32_t> ids = {0, 1};
  std::vector<float> g = {nextUp(0.5f), 0.5f};
  VerdictConfig config;
  config.gateFactor = 0;
  config.gateUlp = 1;
  config.analyticFloor = false;
  LevelCounters levels;
  Contract c;
  c.slotOrder = SlotOrder::kRank;
  Verdict v = judgeToken(x, 2, ids, g, c, config, levels);
  EXPECT_NE(v.outcome, Outcome::kViolation) << v.certificate;
  EXPECT_EQ(levels.gateCertified + levels.gateUndecided, 1u);
  EXPECT_EQ(levels.gateDouble, 1u);  // the second gate, exactly 1/2, is decided in binary64
}

}  // namespace
}  // namespace moe::fuzz
