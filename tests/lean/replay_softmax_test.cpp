// Replay of SoftmaxTest and GatesTest in binary32 and binary64: every intermediate Lean
// recorded (the max m that each exp argument x_i - m uses, the denominator, the
// probabilities, the kept set on the probabilities, the gates) is reproduced bit for bit
// by the oracle given Lean's exp values; enclosures agree with Lean's floats where the
// logits are binary32 numbers (certified/gates.hpp takes binary32 logits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <moe/oracle/certified/gates.hpp>
#include <moe/oracle/routing.hpp>
#include <moe/oracle/softmax.hpp>
#include <optional>

#include "expect_same.hpp"
#include "float_bounds.hpp"
#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;
namespace certified = moe::oracle::certified;

// The logits as binary32 numbers, when each one is exactly a binary32 number.
template <class A>
std::optional<std::vector<float>> asBinary32(const std::vector<A>& logits) {
  std::vector<float> out;
  for (const A& x : logits) {
    const float f = static_cast<float>(x);
    if (!(static_cast<A>(f) == x) && !std::isinf(x)) return std::nullopt;
    out.push_back(f);
  }
  return out;
}

template <class A>
void replaySoftmax(const json& t, std::size_t& enclosures) {
  const auto logits = vecFromJson<A>(t.at("logits"));
  const auto leanExps = vecFromJson<A>(t.at("exps"));
  const A leanMax = scalarFromText<A>(t.at("max"));
  std::vector<A> arguments;
  const auto probs =
      oracle::softmaxVecSpecWith(std::span<const A>(logits), ReplayedExp<A>{leanExps, &arguments});
  expectSame(t, "probs", probs, vecFromJson<A>(t.at("probs")));
  // Each exp argument is x_i - m with Lean's m: the oracle's max fold is Lean's maxOfLe.
  std::vector<A> expectedArguments;
  expectedArguments.reserve(logits.size());
  for (const A& x : logits) expectedArguments.push_back(x - leanMax);
  expectSame(t, "exp argument", arguments, expectedArguments);
  // The denominator is the left fold from +0 of Lean's exps.
  A d = oracle::Context<A>::zero();
  for (const A& e : leanExps) d = oracle::Context<A>::add(d, e);
  EXPECT_TRUE(sameBits(d, scalarFromText<A>(t.at("denominator")))) << describe(t);

  const auto f32 = asBinary32(logits);
  if (!f32 || !certified::isRealRow(*f32)) return;
  std::vector<certified::Certified> exact;
  try {
    exact = certified::softmaxEnclosure(*f32);
  } catch (const oracle::SpecError& e) {
    std::printf("enclosure refused %s: %s\n", describe(t).c_str(), e.what());
    return;
  }
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double distance = std::isinf(logits[i]) ? 0.0 : double(leanMax) - double(logits[i]);
    const double b = probabilityBound<A>(distance, logits.size(), exact[i].range.upperDouble());
    EXPECT_GE(double(probs[i]), exact[i].range.lowerDouble() - b) << describe(t) << " prob " << i;
    EXPECT_LE(double(probs[i]), exact[i].range.upperDouble() + b) << describe(t) << " prob " << i;
    ++enclosures;
  }
}

template <class A>
void replayGates(const json& t) {
  const auto logits = vecFromJson<A>(t.at("logits"));
  const auto leanExps = vecFromJson<A>(t.at("exps"));
  const std::size_t k = t.at("k");
  const A leanMax = scalarFromText<A>(t.at("max"));
  std::vector<A> arguments;
  const auto probs =
      oracle::softmaxVecSpecWith(std::span<const A>(logits), ReplayedExp<A>{leanExps, &arguments});
  expectSame(t, "probs", probs, vecFromJson<A>(t.at("probs")));
  EXPECT_EQ(expArgumentMismatch(logits, leanMax, arguments), "") << describe(t) << " softmax";
  arguments.clear();
  const auto gates =
      oracle::gatesVecSpecWith(k, std::span<const A>(logits), ReplayedExp<A>{leanExps, &arguments});
  expectSame(t, "gates", gates, vecFromJson<A>(t.at("gates")));
  EXPECT_EQ(expArgumentMismatch(logits, leanMax, arguments), "") << describe(t) << " gates";
  const bool nonFinite = std::any_of(probs.begin(), probs.end(), [](A p) { return std::isnan(p); });
  if (!nonFinite) {
    EXPECT_EQ(oracle::keptExperts(k, std::span<const A>(probs)),
              t.at("keptOnProbs").get<std::vector<std::size_t>>())
        << describe(t);
  }
}

TEST(LeanReplaySoftmax, EveryIntermediateBitExactWithLeanExps) {
  std::size_t enclosures = 0, seen32 = 0, seen64 = 0;
  for (const json& t : testsOfType(vectors(), "SoftmaxTest")) {
    if (t.at("context") == "binary32") {
      replaySoftmax<float>(t, enclosures), ++seen32;
    } else if (t.at("context") == "binary64") {
      replaySoftmax<double>(t, enclosures), ++seen64;
    } else {
      ADD_FAILURE() << describe(t) << ": softmax needs exp, not context " << t.at("context");
    }
  }
  EXPECT_GE(seen32, 100u);
  EXPECT_GE(seen64, 100u);
  EXPECT_GE(enclosures, 500u);
}

TEST(LeanReplayGates, GatesAndKeptOnProbsBitExactWithLeanExps) {
  std::size_t seen = 0;
  for (const json& t : testsOfType(vectors(), "GatesTest")) {
    if (t.at("context") == "binary32") {
      replayGates<float>(t);
    } else if (t.at("context") == "binary64") {
      replayGates<double>(t);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << t.at("context");
    }
    ++seen;
  }
  EXPECT_GE(seen, 200u);
}

}  // namespace
}  // namespace moe::lean
