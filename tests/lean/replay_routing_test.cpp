// Replay of RoutingTest and RankTest: the C++ oracle's beats/rank/kept/keptExperts (both
// the literal O(E^2) forms and the O(E log E) ones) equal Lean's exactly; given Lean's exp
// values, softmaxVecSpecWith and gatesVecSpecWith reproduce Lean's binary32 probabilities
// and gates bit for bit, passing exp exactly Lean's arguments x_i - m; and the certified
// real-number enclosures agree with Lean's binary32 values within the bound derived in
// float_bounds.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <moe/oracle/certified/gates.hpp>
#include <moe/oracle/routing.hpp>
#include <moe/oracle/softmax.hpp>
#include <set>

#include "float_bounds.hpp"
#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;
namespace certified = moe::oracle::certified;

template <class A>
void expectSameRouting(const json& t, const std::vector<A>& s, std::size_t k) {
  const std::span<const A> view(s);
  if (t.contains("beats")) {
    const auto expectedBeats = t.at("beats").get<std::vector<std::vector<bool>>>();
    ASSERT_EQ(expectedBeats.size(), s.size()) << describe(t);
    for (std::size_t j = 0; j < s.size(); ++j) {
      for (std::size_t i = 0; i < s.size(); ++i) {
        EXPECT_EQ(oracle::beats(view, j, i), expectedBeats[j][i])
            << describe(t) << " beats " << j << " " << i;
      }
    }
  }
  const auto expectedRanks = t.at("ranks").get<std::vector<std::size_t>>();
  EXPECT_EQ(oracle::ranks(view), expectedRanks) << describe(t);
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(oracle::rank(view, i), expectedRanks[i]) << describe(t) << " literal rank " << i;
  }
  const auto expectedKept = t.at("keptExperts").get<std::vector<std::size_t>>();
  EXPECT_EQ(oracle::keptExperts(k, view), expectedKept) << describe(t);
  std::vector<bool> mask(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) mask[i] = oracle::kept(k, view, i);
  EXPECT_EQ(oracle::keptMask(k, view), mask) << describe(t);
  if (t.contains("kept")) {
    EXPECT_EQ(mask, t.at("kept").get<std::vector<bool>>()) << describe(t);
  }
}

TEST(LeanReplayRouting, RanksAndKeptExpertsMatchLean) {
  const auto tests = testsOfType(vectors(), "RoutingTest");
  ASSERT_GE(tests.size(), 500u);
  for (const json& t : tests) {
    expectSameRouting(t, vecFromJson<float>(t.at("logits")), t.at("k").get<std::size_t>());
  }
}

TEST(LeanReplayRouting, Binary32SoftmaxAndGatesBitExactWithLeanExps) {
  std::size_t hostExpDiffers = 0, exps = 0;
  for (const json& t : testsOfType(vectors(), "RoutingTest")) {
    const auto logits = vecFromJson<float>(t.at("logits"));
    const auto leanExps = vecFromJson<float>(t.at("exps32"));
    const auto leanProbs = vecFromJson<float>(t.at("probs32"));
    const auto leanGates = vecFromJson<float>(t.at("gates32"));
    const float leanMax = f32FromHex(t.at("max32"));
    const std::span<const float> view(logits);
    std::vector<float> arguments;
    const auto probs = oracle::softmaxVecSpecWith(view, ReplayedExp<float>{leanExps, &arguments});
    EXPECT_EQ(expArgumentMismatch(logits, leanMax, arguments), "") << describe(t) << " softmax";
    arguments.clear();
    const auto gates = oracle::gatesVecSpecWith(t.at("k").get<std::size_t>(), view,
                                                ReplayedExp<float>{leanExps, &arguments});
    EXPECT_EQ(expArgumentMismatch(logits, leanMax, arguments), "") << describe(t) << " gates";
    ASSERT_EQ(probs.size(), leanProbs.size()) << describe(t);
    ASSERT_EQ(gates.size(), leanGates.size()) << describe(t);
    for (std::size_t i = 0; i < probs.size(); ++i) {
      EXPECT_TRUE(sameBits(probs[i], leanProbs[i]))
          << describe(t) << " prob " << i << ": oracle " << hexOf(probs[i]) << ", Lean "
          << hexOf(leanProbs[i]);
      EXPECT_TRUE(sameBits(gates[i], leanGates[i]))
          << describe(t) << " gate " << i << ": oracle " << hexOf(gates[i]) << ", Lean "
          << hexOf(leanGates[i]);
    }
    // How often the host's expf differs from Lean's (musl) on the same argument: the
    // reason the vectors carry the exp values. Counted, not asserted.
    float m = logits.empty() ? 0.0f : logits[0];
    for (float x : logits) m = oracle::Context<float>::max(m, x);
    for (std::size_t i = 0; i < logits.size(); ++i, ++exps) {
      hostExpDiffers += sameBits(std::exp(logits[i] - m), leanExps[i]) ? 0 : 1;
    }
  }
  std::printf("host expf differs from Lean's exp on %zu of %zu arguments\n", hostExpDiffers, exps);
}

TEST(LeanReplayRouting, AcceptableExactlyWhereBinary32ProbabilitiesRouteDifferently) {
  std::size_t acceptable = 0;
  for (const json& t : testsOfType(vectors(), "RoutingTest")) {
    const auto probs = vecFromJson<float>(t.at("probs32"));
    if (std::any_of(probs.begin(), probs.end(), [](float p) { return std::isnan(p); })) continue;
    const std::size_t k = t.at("k");
    const auto onProbs = oracle::keptExperts(k, std::span<const float>(probs));
    const auto onLogits = t.at("keptExperts").get<std::vector<std::size_t>>();
    const bool differs = std::set<std::size_t>(onProbs.begin(), onProbs.end()) !=
                         std::set<std::size_t>(onLogits.begin(), onLogits.end());
    EXPECT_EQ(t.at("result") == "acceptable", differs) << describe(t);
    acceptable += differs ? 1 : 0;
  }
  EXPECT_GE(acceptable, 1u) << "the seed's 0 vs 2^-30 example must be among them";
}

// Checks one real row; the enclosure code may refuse a row (SpecError), which is counted.
void checkRoutingEnclosures(const json& t, std::size_t& checked);

TEST(LeanReplayRouting, CertifiedEnclosuresAgreeWithLeanBinary32) {
  std::size_t checked = 0, refused = 0, rows = 0;
  for (const json& t : testsOfType(vectors(), "RoutingTest")) {
    if (!certified::isRealRow(vecFromJson<float>(t.at("logits")))) continue;
    ++rows;
    try {
      checkRoutingEnclosures(t, checked);
    } catch (const oracle::SpecError& e) {
      if (++refused <= 3) std::printf("enclosure refused %s: %s\n", describe(t).c_str(), e.what());
    }
  }
  std::printf("enclosures checked %zu probabilities; %zu of %zu rows refused\n", checked, refused,
              rows);
  EXPECT_LE(refused * 20, rows) << "the enclosures refused more than 5% of the real rows";
  EXPECT_GE(checked, 2000u);
}

void checkRoutingEnclosures(const json& t, std::size_t& checked) {
  const auto logits = vecFromJson<float>(t.at("logits"));
  const auto leanProbs = vecFromJson<float>(t.at("probs32"));
  const auto leanGates = vecFromJson<float>(t.at("gates32"));
  const std::size_t E = logits.size(), k = t.at("k");
  const auto exact = certified::softmaxEnclosure(logits);
  float m = logits[0];
  for (float x : logits) m = oracle::Context<float>::max(m, x);
  std::vector<double> rho(E);
  for (std::size_t i = 0; i < E; ++i) {
    const double distance = std::isinf(logits[i]) ? 0.0 : double(m) - double(logits[i]);
    rho[i] = probabilityRelativeBound<float>(distance, E);
    const double b = probabilityBound<float>(distance, E, exact[i].range.upperDouble());
    EXPECT_GE(leanProbs[i], exact[i].range.lowerDouble() - b) << describe(t) << " prob " << i;
    EXPECT_LE(leanProbs[i], exact[i].range.upperDouble() + b) << describe(t) << " prob " << i;
    ++checked;
  }
  // Gates: compare with the exact gates of the set Lean kept on its binary32 probabilities.
  const auto mask = oracle::gatesKeptMask(k, std::span<const float>(leanProbs));
  std::vector<std::size_t> keptSet;
  for (std::size_t e = 0; e < E; ++e) {
    if (mask[e]) {
      keptSet.push_back(e);
    } else {
      EXPECT_EQ(bitsOf(leanGates[e]), 0u) << describe(t) << " gate off the kept set";
    }
  }
  if (keptSet.empty()) return;
  const auto gates = certified::keptGatesEnclosure(logits, keptSet);
  double rhoMax = 0;
  for (std::size_t e : keptSet) rhoMax = std::max(rhoMax, rho[e]);
  for (std::size_t j = 0; j < keptSet.size(); ++j) {
    const std::size_t e = keptSet[j];
    const double b =
        gateBound<float>(rho[e], rhoMax, keptSet.size(), E, gates[j].range.upperDouble());
    EXPECT_GE(leanGates[e], gates[j].range.lowerDouble() - b) << describe(t) << " gate " << e;
    EXPECT_LE(leanGates[e], gates[j].range.upperDouble() + b) << describe(t) << " gate " << e;
  }
}

template <class A>
void replayRankTest(const json& t) {
  const auto s = vecFromJson<A>(t.at("scores"));
  const std::size_t k = t.at("k");
  if (t.at("result") == "invalid") {
    // NaN is outside StrictWeak: the fast entry points must refuse, naming the index.
    EXPECT_THROW(oracle::ranks(std::span<const A>(s)), oracle::SpecError) << describe(t);
    EXPECT_THROW(oracle::keptExperts(k, std::span<const A>(s)), oracle::SpecError) << describe(t);
    return;
  }
  EXPECT_TRUE(oracle::StrictWeak(std::span<const A>(s)).ok) << describe(t);
  EXPECT_TRUE(t.contains("beats")) << describe(t) << ": RankTest exports beats";
  expectSameRouting(t, s, k);
}

TEST(LeanReplayRouting, RankTestInEveryContext) {
  std::set<std::string> contexts;
  std::size_t invalid = 0;
  for (const json& t : testsOfType(vectors(), "RankTest")) {
    const std::string context = t.at("context");
    contexts.insert(context);
    invalid += t.at("result") == "invalid" ? 1 : 0;
    if (context == "binary32") {
      replayRankTest<float>(t);
    } else if (context == "binary64") {
      replayRankTest<double>(t);
    } else if (context == "rational") {
      replayRankTest<mpq_class>(t);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << context;
    }
  }
  EXPECT_EQ(contexts, (std::set<std::string>{"binary32", "binary64", "rational"}));
  EXPECT_GE(invalid, 1u);
}

}  // namespace
}  // namespace moe::lean
