// Replay of the Lean RoutingTests through the fuzzer's own vector reader and verdict code
// (fuzz/io/replay.cpp): against the oracle alone, and against every built-in router this
// CPU can run, once the fuzzer provides the verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <moe/fuzz/router.hpp>
#include <moe/fuzz/vectors.hpp>
#include <moe/fuzz/verdict.hpp>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

std::string firstLines(const moe::fuzz::ReplaySummary& s) {
  std::string out;
  for (std::size_t i = 0; i < s.lines.size() && i < 15; ++i) out += s.lines[i] + "\n";
  return out;
}

std::size_t routingTests() {
  return testsOfType(vectors(), "RoutingTest").size();
}

TEST(LeanReplayThroughFuzz, OracleAgreesThroughTheFuzzReader) {
  const auto summary = moe::fuzz::replayVectors(vectors(), nullptr, {});
  EXPECT_EQ(summary.failed, 0) << firstLines(summary);
  EXPECT_EQ(static_cast<std::size_t>(summary.passed), routingTests());
}

TEST(LeanReplayThroughFuzz, EveryBuiltinRouterPassesTheVerdict) {
  std::size_t routers = 0;
  for (const std::string& name : moe::fuzz::builtinRouterNames()) {
    const auto router = moe::fuzz::openRouter(name);
    const auto summary = moe::fuzz::replayVectors(vectors(), router.get(), {});
    EXPECT_EQ(summary.failed, 0) << name << ":\n" << firstLines(summary);
    std::printf("%s: %d passed, %d failed, %d skipped\n", name.c_str(), summary.passed,
                summary.failed, summary.skipped);
    ++routers;
  }
  EXPECT_GE(routers, 1u);
}

// The verdict must also fail what is wrong: Lean's own output for a RoutingTest (the kept
// experts best first, Lean's binary32 gates), judged as a router that selects on the
// probabilities and promises rank order, is not a violation; with the two best slots
// swapped, where the best probability is at least twice the second (far beyond any
// rounding budget), it is a slot-order violation.
TEST(LeanReplayThroughFuzz, SwappedSlotsFarApartAreASlotOrderViolation) {
  moe::fuzz::Contract contract;
  contract.selectsOn = moe::fuzz::SelectsOn::kProbabilities;
  contract.slotOrder = moe::fuzz::SlotOrder::kRank;
  std::size_t swapped = 0;
  for (const json& t : testsOfType(vectors(), "RoutingTest")) {
    if (t.at("result") != "valid") continue;
    const auto logits = vecFromJson<float>(t.at("logits"));
    const auto probs = vecFromJson<float>(t.at("probs32"));
    const auto gates32 = vecFromJson<float>(t.at("gates32"));
    const auto kept = t.at("keptExperts").get<std::vector<int32_t>>();
    const int32_t k = t.at("k");
    if (kept.size() < 2 ||
        std::any_of(probs.begin(), probs.end(), [](float p) { return !(p >= 0.0f); })) {
      continue;
    }
    if (!(probs[kept[0]] >= 2.0f * probs[kept[1]])) continue;
    std::vector<int32_t> ids(static_cast<std::size_t>(k), -1);
    std::vector<float> gates(static_cast<std::size_t>(k), 0.0f);
    for (std::size_t s = 0; s < kept.size(); ++s) {
      ids[s] = kept[s];
      gates[s] = gates32[kept[s]];
    }
    moe::fuzz::LevelCounters levels;
    const auto asLean = moe::fuzz::judgeToken(logits, k, ids, gates, contract, {}, levels);
    EXPECT_NE(asLean.outcome, moe::fuzz::Outcome::kViolation)
        << describe(t) << ": " << asLean.certificate;
    std::swap(ids[0], ids[1]);
    std::swap(gates[0], gates[1]);
    const auto bad = moe::fuzz::judgeToken(logits, k, ids, gates, contract, {}, levels);
    EXPECT_EQ(bad.outcome, moe::fuzz::Outcome::kViolation) << describe(t);
    EXPECT_EQ(bad.kind, moe::fuzz::ViolationKind::kSlotOrder)
        << describe(t) << ": " << bad.certificate;
    ++swapped;
  }
  EXPECT_GE(swapped, 50u);
}

}  // namespace
}  // namespace moe::lean
