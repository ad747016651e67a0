// The fused layer's verdict (fuzz/judge/layer_*.cpp) both ways: layers that sum in any
// order stay inside the derived budget, an error a few ulps past it is caught, and each
// broken layer is caught with its kind, with and without the routing returned.
#include "moe/fuzz/layer_verdict.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "layers/test_layer.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/layer_kernel.hpp"

namespace {

using namespace moe::fuzz;
using moe::test_layer::Bug;
using moe::test_layer::Order;

enum class Style { kUniform, kCancelling, kMagnitudes, kBf16 };

// A random case: weights U(-1, 1) / sqrt(fan-in); cancelling: W3 rows the negation of a
// neighbour's plus a small part, x with opposite halves; magnitudes: x and W2 scaled by
// powers of two far from 1 (2^40, 2^-40); bf16: every value rounded to bf16.
LayerCase randomCase(uint64_t seed, int32_t T, int32_t H, int32_t I, int32_t E, int32_t k,
                     Style style) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  LayerCase c;
  c.tokens = T, c.hidden = H, c.intermediate = I, c.experts = E, c.k = k;
  c.x.resize(static_cast<size_t>(T) * H);
  c.logits.resize(static_cast<size_t>(T) * E);
  c.w13.resize(static_cast<size_t>(E) * 2 * I * H);
  c.w2.resize(static_cast<size_t>(E) * H * I);
  for (float& v : c.x) v = u(rng);
  for (float& v : c.logits) v = 4 * u(rng);
  for (float& v : c.w13) v = u(rng) / std::sqrt(static_cast<float>(H));
  for (float& v : c.w2) v = u(rng) / std::sqrt(static_cast<float>(I));
  if (style == Style::kCancelling) {
    for (size_t i = 0; i + 1 < c.x.size(); i += 2) c.x[i + 1] = -c.x[i] * (1 + 0x1p-12f);
    for (float& v : c.w2) v = std::round(v * 8) / 8;
  }
  if (style == Style::kMagnitudes) {
    const float big = seed % 2 ? 0x1p40f : 0x1p-40f;
    for (float& v : c.x) v *= big;
    for (float& v : c.w2) v *= 1 / big;
  }
  if (style == Style::kBf16) {
    c.dtype = LayerDtype::kBf16;
    for (auto* v : {&c.x, &c.w13, &c.w2}) {
      for (float& f : *v) f = roundToBf16(f);
    }
  }
  return c;
}

template <Order O, Bug B>
std::unique_ptr<LayerKernel> kernel() {
  return layerKernelFromFunction("test-layer", &moe::test_layer::layer<O, B>,
                                 R"({"abi": "moe_layer_v1", "dtype": ["f32", "bf16"]})");
}

struct Shape {
  int32_t T, H, I, E, k;
};
// Boundaries on purpose: one of everything; H a multiple of 64 and one past it; I one past
// a block of 16; k = E.
constexpr Shape kShapes[] = {{3, 1, 1, 2, 1},    {2, 64, 32, 8, 2}, {2, 65, 17, 16, 4},
                             {1, 257, 64, 4, 2}, {2, 63, 33, 4, 4}, {1, 128, 128, 32, 8}};

LayerCaseResult judgeWith(const LayerKernel& k, const LayerCase& c, bool routed, Judge& judge) {
  return judgeLayerOutput(c, k.run(c, routed), k.contract(), judge, k.rerun(routed));
}

template <Order O>
void expectInsideBudget(const char* name) {
  const auto k = kernel<O, Bug::kNone>();
  Judge judge;
  double worst = 0;
  uint64_t seed = 7;
  for (const Shape& s : kShapes) {
    for (Style style : {Style::kUniform, Style::kCancelling, Style::kMagnitudes, Style::kBf16}) {
      for (bool routed : {true, false}) {
        const LayerCase c = randomCase(seed++, s.T, s.H, s.I, s.E, s.k, style);
        const LayerCaseResult r = judgeWith(*k, c, routed, judge);
        ASSERT_FALSE(r.violation) << name << " seed " << seed - 1 << ": "
                                  << kindName(r.violation->kind) << ": "
                                  << r.violation->certificate;
        for (const auto& v : r.tokens) worst = std::max(worst, v.margin);
      }
    }
  }
  // The bound is a worst case: real rounding uses a small part of it.
  EXPECT_LT(worst, 0.25) << name;
}

TEST(LayerBudget, SequentialSumsStayInside) {
  expectInsideBudget<Order::kSequential>("sequential");
}
TEST(LayerBudget, ShuffledSumsStayInside) {
  expectInsideBudget<Order::kShuffled>("shuffled");
}
TEST(LayerBudget, PairwiseSumsStayInside) {
  expectInsideBudget<Order::kPairwise>("pairwise");
}
TEST(LayerBudget, BlockedSumsStayInside) {
  expectInsideBudget<Order::kBlocked>("blocked");
}
TEST(LayerBudget, FmaChainsStayInside) {
  expectInsideBudget<Order::kFma>("fma");
}
TEST(LayerBudget, OneFlatSumOverEverySlotStaysInside) {
  expectInsideBudget<Order::kFlat>("flat");
}

// Hidden units that underflow, times a gate far above 1 (a family's scale): a product's
// underflow (2^-150) is then carried by the factor applied after it, the gate or W2, not
// added once. A CI run drew this case (T 1, H 3, I 1, E 1, gate 123.45, h about 1e-43):
// the in-tree layer erred by 9.2e-44 against a budget that counted 6.2e-44.
TEST(LayerBudget, SubnormalHiddenUnitsTimesALargeGateStayInside) {
  LayerCase c;
  c.tokens = 1, c.hidden = 3, c.intermediate = 1, c.experts = 1, c.k = 1;
  c.x = {floatOf(0x1ebcd07a), floatOf(0x1e313e9c), floatOf(0x9d9f2018)};
  c.logits = {floatOf(0xc2a4c000)};
  c.w13 = {floatOf(0x1b830273), floatOf(0xbc8aa238), floatOf(0x9b9fce9d),
           floatOf(0x3d1c5736), floatOf(0x3c808af0), floatOf(0x3ce9b9cb)};
  c.w2 = {floatOf(0xbea585c3), floatOf(0x3f006a00), floatOf(0xbecf5f00)};
  Family f;
  f.bias = {0.25f};
  f.scale = floatOf(0x42f6e666);  // 123.45
  c.family = f;
  // And random cases of the same kind: x at 2^-66, so that h is subnormal, at larger shapes.
  std::vector<LayerCase> cases{c};
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    LayerCase r = randomCase(seed, 2, 16, 4, 4, 2, Style::kUniform);
    for (float& v : r.x) v *= 0x1p-66f;
    r.family = f;
    r.family->bias.assign(4, 0.25f);
    cases.push_back(std::move(r));
  }
  const std::unique_ptr<LayerKernel> kernels[] = {
      kernel<Order::kSequential, Bug::kNone>(), kernel<Order::kShuffled, Bug::kNone>(),
      kernel<Order::kPairwise, Bug::kNone>(),   kernel<Order::kBlocked, Bug::kNone>(),
      kernel<Order::kFma, Bug::kNone>(),        kernel<Order::kFlat, Bug::kNone>()};
  for (const auto& k : kernels) {
    for (size_t i = 0; i < cases.size(); ++i) {
      for (bool routed : {true, false}) {
        Judge judge;
        const LayerCaseResult r = judgeWith(*k, cases[i], routed, judge);
        EXPECT_FALSE(r.violation) << "case " << i << ": " << r.violation->certificate;
      }
    }
  }
}

// The reference and budget of the routing a correct layer returned, for planting errors.
LayerReference referenceFor(const LayerCase& c, const LayerOutput& out, int32_t t) {
  std::vector<int32_t> experts;
  std::vector<double> gates;
  std::vector<ExpertTerms> terms;
  for (int32_t s = 0; s < c.k; ++s) {
    const int32_t e = out.ids[static_cast<size_t>(t * c.k + s)];
    if (e < 0) continue;
    experts.push_back(e);
    gates.push_back(out.gates[static_cast<size_t>(t * c.k + s)]);
    terms.push_back(expertTerms(c, t, e, 4.0));
  }
  std::vector<const ExpertTerms*> ptrs;
  for (const auto& T : terms) ptrs.push_back(&T);
  return combineReference(experts, gates, ptrs, {}, c.hidden, c.intermediate, 1.0);
}

float stepsFrom(double v, int steps) {
  float f = static_cast<float>(v);
  for (int i = 0; i < std::abs(steps); ++i) f = steps > 0 ? nextUp(f) : nextDown(f);
  return f;
}

// y one coordinate at the budget's edge: three ulps inside passes, three ulps past is
// caught, on either side of the reference.
TEST(LayerBudget, AnErrorAFewUlpsPastTheBudgetIsCaught) {
  const auto k = kernel<Order::kSequential, Bug::kNone>();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const LayerCase c = randomCase(seed, 1, 64, 32, 8, 2, Style::kUniform);
    const LayerOutput good = k->run(c, true);
    const LayerReference ref = referenceFor(c, good, 0);
    for (int side : {1, -1}) {
      const double edge = ref.ref[3] + side * ref.budget[3];
      LayerOutput inside = good, past = good;
      inside.y[3] = stepsFrom(edge, -3 * side);
      past.y[3] = stepsFrom(edge, 3 * side);
      Judge judge;
      const auto in = judgeLayerOutput(c, inside, k->contract(), judge, {});
      EXPECT_FALSE(in.violation) << "seed " << seed << ": " << in.violation->certificate;
      const auto out = judgeLayerOutput(c, past, k->contract(), judge, {});
      ASSERT_TRUE(out.violation) << "seed " << seed << " side " << side;
      EXPECT_EQ(out.violation->coordinate, 3);
      EXPECT_GT(out.violation->margin, 1.0);
    }
  }
}

// The budget is the derived bound, term by term, on a case small enough to derive by hand:
// H = I = E = k = 1, x = W1 = W3 = W2 = 1, gate 1. a = b = 1 (A = B = 1), s = silu(1).
TEST(LayerBudget, TheBudgetIsTheDerivedBound) {
  LayerCase c;
  c.tokens = c.hidden = c.intermediate = c.experts = c.k = 1;
  c.x = {1.0f};
  c.logits = {0.0f};
  c.w13 = {1.0f, 1.0f};
  c.w2 = {1.0f};
  const double u = 0x1p-24, eta = 0x1p-149, cUlp = 4;
  const double g1 = u / (1 - u), g2 = 2 * u / (1 - 2 * u);
  const double s = 1 / (1 + std::exp(-1.0));
  const double da = g1 + eta, db = da;
  const double ds = 1.1 * da + (cUlp + 3) * u * (s + 1.1 * da) + 4 * eta;
  const double dh = s * db + ds * (1 + db) + u * (s + ds) * (1 + db) + eta;
  // The products' underflow: 2 eta, and one more eta carried by g, W2 or h, whichever
  // comes last.
  const double under = 2 * 2 * eta + eta * (1 + u) * (1 + 1 + s + dh);
  const double expected = (dh + g2 * (s + dh) + under) * (1 + 0x1p-18);
  const ExpertTerms T = expertTerms(c, 0, 0, cUlp);
  const ExpertTerms* ptr = &T;
  const std::vector<int32_t> experts{0};
  const std::vector<double> gates{1.0};
  const LayerReference r = combineReference(experts, gates, {&ptr, 1}, {}, 1, 1, 1.0);
  EXPECT_DOUBLE_EQ(r.ref[0], s);
  EXPECT_NEAR(r.budget[0], expected, expected * 1e-12);
  // About 12 u of s: the two dot products, the SiLU and the two products.
  EXPECT_LT(r.budget[0], 16 * u * s);
}

// The derived bound is what the verdict uses: a budget factor widens it in proportion.
TEST(LayerBudget, TheContractsFactorWidensIt) {
  const auto k = kernel<Order::kSequential, Bug::kNone>();
  const LayerCase c = randomCase(3, 1, 64, 32, 8, 2, Style::kUniform);
  LayerOutput out = k->run(c, true);
  const LayerReference ref = referenceFor(c, out, 0);
  out.y[5] = static_cast<float>(ref.ref[5] + 1.5 * ref.budget[5]);
  Judge judge;
  Contract contract = k->contract();
  EXPECT_TRUE(judgeLayerOutput(c, out, contract, judge, {}).violation);
  contract.layer.budgetFactor = 2;
  EXPECT_FALSE(judgeLayerOutput(c, out, contract, judge, {}).violation);
}

struct BrokenCase {
  const char* name;
  std::unique_ptr<LayerKernel> (*make)();
  ViolationKind kind;
};

void expectCaught(const BrokenCase& b, Style style = Style::kUniform) {
  const auto k = b.make();
  for (bool routed : {true, false}) {
    int caught = 0;
    for (uint64_t seed = 11; seed < 17; ++seed) {
      const LayerCase c = randomCase(seed, 2, 16, 8, 8, 2, style);
      Judge judge;
      const LayerCaseResult r = judgeWith(*k, c, routed, judge);
      ASSERT_TRUE(r.violation) << b.name << " seed " << seed << " routed " << routed;
      EXPECT_EQ(kindName(r.violation->kind), kindName(b.kind))
          << b.name << " seed " << seed << " routed " << routed << ": " << r.violation->certificate;
      EXPECT_GE(r.violation->token, 0);
      EXPECT_GE(r.violation->coordinate, 0);
      if (b.kind != ViolationKind::kLayerNonfinite) {
        EXPECT_GE(r.violation->expert, 0);
      }
      caught += r.violation->kind == b.kind;
    }
    EXPECT_EQ(caught, 6) << b.name;
  }
}

TEST(BrokenLayers, AnExpertAddedTwiceIsExtraExpert) {
  expectCaught(
      {"double-add", &kernel<Order::kSequential, Bug::kDoubleAdd>, ViolationKind::kExtraExpert});
}
TEST(BrokenLayers, GatesBeforeTheActivationAreExpertOutput) {
  expectCaught({"gate-before-act", &kernel<Order::kSequential, Bug::kGateBeforeActivation>,
                ViolationKind::kExpertOutput});
}
TEST(BrokenLayers, ABf16AccumulatorIsExpertOutput) {
  expectCaught({"bf16-accumulator", &kernel<Order::kSequential, Bug::kBf16Accumulator>,
                ViolationKind::kExpertOutput});
}
TEST(BrokenLayers, AMissingExpertIsMissingExpert) {
  expectCaught({"missing-expert", &kernel<Order::kSequential, Bug::kMissing>,
                ViolationKind::kMissingExpert});
}
TEST(BrokenLayers, AWrongGateIsCombineGate) {
  expectCaught(
      {"wrong-gate", &kernel<Order::kSequential, Bug::kWrongGate>, ViolationKind::kCombineGate});
}

// E 99, k 10, bf16: ten kept experts' gates cannot be fitted jointly on a token of H <= k
// coordinates, but the expert the isolation names can be tried alone (one gate, fitted on x
// and on x negated): the unrenormalised gate is combine-gate there too, and a wrong output
// (the gate applied before the activation) stays expert-output, never combine-gate.
TEST(BrokenLayers, AWrongGateAmongTenExpertsIsCombineGate) {
  const auto wrong = kernel<Order::kSequential, Bug::kWrongGate>();
  const auto beforeAct = kernel<Order::kSequential, Bug::kGateBeforeActivation>();
  for (int32_t H : {1, 2, 5, 10, 117}) {
    for (uint64_t seed = 1; seed < 4; ++seed) {
      const LayerCase c = randomCase(seed, 1, H, 16, 99, 10, Style::kBf16);
      for (bool routed : {true, false}) {
        Judge judge;
        const LayerCaseResult r = judgeWith(*wrong, c, routed, judge);
        ASSERT_TRUE(r.violation) << "H " << H << " seed " << seed;
        EXPECT_EQ(kindName(r.violation->kind), kindName(ViolationKind::kCombineGate))
            << "H " << H << " seed " << seed << " routed " << routed << ": "
            << r.violation->certificate;
        EXPECT_GE(r.violation->expert, 0);
        const LayerCaseResult b = judgeWith(*beforeAct, c, routed, judge);
        ASSERT_TRUE(b.violation) << "H " << H << " seed " << seed;
        EXPECT_EQ(kindName(b.violation->kind), kindName(ViolationKind::kExpertOutput))
            << "H " << H << " seed " << seed << " routed " << routed << ": "
            << b.violation->certificate;
      }
    }
  }
}

// Without a rerun, a fitted gate is never named (the numbers alone may fit it by
// coincidence): the wrong gate is then expert-output, its expert not isolated.
TEST(BrokenLayers, AFittedCauseNeedsTheRerun) {
  const auto k = kernel<Order::kSequential, Bug::kWrongGate>();
  const LayerCase c = randomCase(11, 1, 16, 8, 8, 2, Style::kUniform);
  Judge judge;
  const auto r = judgeLayerOutput(c, k->run(c, true), k->contract(), judge, {});
  ASSERT_TRUE(r.violation);
  EXPECT_EQ(r.violation->kind, ViolationKind::kExpertOutput);
  EXPECT_EQ(r.violation->expert, -1);
  EXPECT_NE(r.violation->certificate.find("no rerun"), std::string::npos);
}

// The output of one expert as y, rounded once: within any routing's budget that keeps it.
std::vector<float> outputOf(const LayerCase& c, int32_t e) {
  const ExpertTerms T = expertTerms(c, 0, e, 4.0);
  std::vector<float> y;
  for (double f : T.f) y.push_back(static_cast<float>(f));
  return y;
}

// logits 0 and 2^-30 have equal binary32 probabilities: the real-number spec keeps expert 1,
// the binary32 spec expert 0 (the lower index), a near-tie the router verdict accepts; so a
// layer that returns no routing may have used either, and a far expert it may not.
TEST(LayerVerdict, WithoutRoutingANearTieGivesTwoRoutings) {
  LayerCase c = randomCase(5, 1, 8, 4, 4, 1, Style::kUniform);
  c.logits = {0.0f, 0x1p-30f, -5.0f, -6.0f};
  Judge judge;
  Contract contract;
  contract.abi = std::string(kAbiLayerV1);
  for (int32_t e : {0, 1}) {
    LayerOutput out;
    out.y = outputOf(c, e);
    const auto r = judgeLayerOutput(c, out, contract, judge, {});
    EXPECT_FALSE(r.violation) << "expert " << e << ": " << r.violation->certificate;
    ASSERT_EQ(r.tokens.size(), 1u);
    EXPECT_EQ(r.tokens[0].reason, e == 0 ? "near-tie-routing" : "");
  }
  LayerOutput far;
  far.y = outputOf(c, 2);
  EXPECT_TRUE(judgeLayerOutput(c, far, contract, judge, {}).violation);
}

// Every filling of a near-tie group at the kept boundary is a candidate: a layer that keeps
// the last of five tied experts (an exp that rounds otherwise, a topk with any tie order)
// passes without returning its routing. A group with too many fillings (64 tied experts,
// k 8) leaves y unjudged, with its reason; the same output with its routing returned is
// judged, and a wrong y over a tied group is still caught when the group is enumerable.
TEST(LayerVerdict, NearTieGroupsAreEnumeratedOrNamedUnjudged) {
  const auto good = kernel<Order::kSequential, Bug::kNone>();
  Judge judge;
  Contract any;
  any.abi = std::string(kAbiLayerV1);
  any.tieOrder = TieOrder::kAny;
  // Five tied experts of eight, k 2: the layer keeps experts 3 and 4 (the reversed case's 0
  // and 1 are them).
  LayerCase c = randomCase(21, 1, 16, 8, 8, 2, Style::kUniform);
  c.logits = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, -3.0f, -4.0f, -5.0f};
  auto reversedExperts = [](LayerCase in, int32_t n) {
    // Experts 0..n-1 in reverse order (weights and logits), the rest in place.
    LayerCase r = in;
    const size_t w13 = static_cast<size_t>(2 * in.intermediate * in.hidden),
                 w2 = static_cast<size_t>(in.hidden * in.intermediate);
    for (int32_t e = 0; e < n; ++e) {
      const int32_t from = n - 1 - e;
      std::copy_n(in.w13.begin() + from * w13, w13, r.w13.begin() + e * w13);
      std::copy_n(in.w2.begin() + from * w2, w2, r.w2.begin() + e * w2);
      r.logits[static_cast<size_t>(e)] = in.logits[static_cast<size_t>(from)];
    }
    return r;
  };
  const LayerOutput lastTied = good->run(reversedExperts(c, 5), false);
  const auto passed = judgeLayerOutput(c, lastTied, any, judge, {});
  EXPECT_FALSE(passed.violation) << passed.violation->certificate;
  LayerOutput wrong = lastTied;
  wrong.y[3] += 1.0f;
  EXPECT_TRUE(judgeLayerOutput(c, wrong, any, judge, {}).violation);
  // 64 tied experts, k 8: C(64, 8) fillings, too many; the layer keeps the last eight.
  LayerCase big = randomCase(22, 1, 8, 4, 64, 8, Style::kUniform);
  std::fill(big.logits.begin(), big.logits.end(), 0.5f);
  const LayerOutput last8 = good->run(reversedExperts(big, 64), false);
  const auto unjudged = judgeLayerOutput(big, last8, any, judge, {});
  ASSERT_FALSE(unjudged.violation) << unjudged.violation->certificate;
  ASSERT_EQ(unjudged.tokens.size(), 1u);
  EXPECT_EQ(unjudged.tokens[0].reason, "near-tie-group-unenumerated");
  // Asked for, its routing is judged (tie order any: acceptable) and y over it.
  const LayerOutput routed = good->run(reversedExperts(big, 64), true);
  LayerOutput asBig = routed;
  for (int32_t& id : asBig.ids) id = 63 - id;
  const auto judged = judgeLayerOutput(big, asBig, any, judge, {});
  EXPECT_FALSE(judged.violation) << judged.violation->certificate;
  asBig.y[0] += 1.0f;
  EXPECT_TRUE(judgeLayerOutput(big, asBig, any, judge, {}).violation);
}

// A routing family (moe_route_v2's steps): sigmoid scores, a bias, groups, a scale; the
// correct layer passes with and without its routing returned, a missing expert is caught.
TEST(LayerVerdict, AFamilysRoutingIsJudgedAsV2s) {
  const auto good = kernel<Order::kShuffled, Bug::kNone>();
  const auto missing = kernel<Order::kSequential, Bug::kMissing>();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    LayerCase c = randomCase(seed, 3, 32, 16, 8, 2, Style::kUniform);
    Family f;
    f.score = ScoreFunction::kSigmoid;
    f.bias = {0.1f, -0.2f, 0.0f, 0.3f, 0.05f, -0.1f, 0.2f, 0.0f};
    f.groups = 4;
    f.topkGroups = 2;
    f.renormalize = seed % 2 ? 1 : 0;
    f.scale = 2.5f;
    c.family = f;
    for (bool routed : {true, false}) {
      Judge judge;
      const auto ok = judgeWith(*good, c, routed, judge);
      EXPECT_FALSE(ok.violation) << "seed " << seed << ": " << ok.violation->certificate;
      const auto bad = judgeWith(*missing, c, routed, judge);
      ASSERT_TRUE(bad.violation) << "seed " << seed;
      EXPECT_EQ(bad.violation->kind, ViolationKind::kMissingExpert) << bad.violation->certificate;
    }
  }
}

TEST(LayerVerdict, TheReturnedRoutingIsJudgedFirst) {
  const auto k = kernel<Order::kSequential, Bug::kNone>();
  const LayerCase c = randomCase(2, 1, 8, 4, 4, 2, Style::kUniform);
  LayerOutput out = k->run(c, true);
  out.ids[1] = out.ids[0];
  Judge judge;
  const auto r = judgeLayerOutput(c, out, k->contract(), judge, {});
  ASSERT_TRUE(r.violation);
  EXPECT_EQ(r.violation->kind, ViolationKind::kIdRepeated) << r.violation->certificate;
}

TEST(LayerVerdict, ANonfiniteOutputWhereNothingOverflowsIsLayerNonfinite) {
  const auto k = kernel<Order::kSequential, Bug::kNone>();
  const LayerCase c = randomCase(2, 1, 8, 4, 4, 2, Style::kUniform);
  LayerOutput out = k->run(c, true);
  out.y[6] = std::numeric_limits<float>::infinity();
  Judge judge;
  const auto r = judgeLayerOutput(c, out, k->contract(), judge, {});
  ASSERT_TRUE(r.violation);
  EXPECT_EQ(r.violation->kind, ViolationKind::kLayerNonfinite);
  EXPECT_EQ(r.violation->coordinate, 6);
}

// Weights near binary32's top: the evaluation may overflow, so y is not judged.
TEST(LayerVerdict, WhereTheEvaluationMayOverflowYIsNotJudged) {
  const auto k = kernel<Order::kSequential, Bug::kNone>();
  LayerCase c = randomCase(2, 1, 8, 4, 4, 2, Style::kUniform);
  for (float& v : c.w13) v *= 0x1p100f;
  for (float& v : c.x) v *= 0x1p60f;
  LayerOutput out = k->run(c, true);
  std::fill(out.y.begin(), out.y.end(), std::numeric_limits<float>::quiet_NaN());
  Judge judge;
  const auto r = judgeLayerOutput(c, out, k->contract(), judge, {});
  EXPECT_FALSE(r.violation);
  ASSERT_FALSE(r.tokens.empty());
  EXPECT_EQ(r.tokens[0].reason, "overflow");
}

TEST(LayerContract, TheLayerFieldsParse) {
  const Contract c = parseContract(
      R"({"abi": "moe_layer_v1", "activation": "swiglu", "dtype": ["bf16"], "accumulate":
          "binary32", "budget_factor": 2, "silu_ulp": 8, "families": {"scores": ["sigmoid"]},
          "shapes": {"hidden": [64, "128-4096"], "intermediate": ["1-512"]}})");
  EXPECT_TRUE(c.isLayer());
  EXPECT_FALSE(c.layer.f32);
  EXPECT_TRUE(c.layer.bf16);
  EXPECT_EQ(c.layer.budgetFactor, 2);
  EXPECT_EQ(c.layer.siluUlp, 8);
  EXPECT_TRUE(c.families.sigmoid);
  EXPECT_TRUE(c.shapes.hidden.contains(64));
  EXPECT_FALSE(c.shapes.hidden.contains(65));
  const Contract again = parseContractJSON(contractJSON(c));
  EXPECT_EQ(contractJSON(again), contractJSON(c));
  EXPECT_THROW(parseContract(R"({"dtype": ["f32"]})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"abi": "moe_layer_v1", "budget_factor": 0.5})"),
               std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"abi": "moe_layer_v1", "dtype": ["f16"]})"),
               std::invalid_argument);
}

}  // namespace
