// Replay of PermuteTest (seed moe-gate-permute: gate (s ∘ e) i = gate s (e i)) over exact
// rational probabilities: the oracle's relabel and gatesFromProbs give Lean's gates of p and
// of p ∘ e exactly, the oracle's noTieAtKeptBoundary agrees with Lean's flag, and the
// gates relabel exactly whenever no tie straddles the kept boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <moe/oracle/permute.hpp>
#include <moe/oracle/softmax.hpp>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;

bool hasFlag(const json& t, const char* flag) {
  const auto& flags = t.at("flags");
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

TEST(LeanReplayPermute, GatesOfRelabelledExpertsMatchLean) {
  std::size_t relabelled = 0, tiedAtBoundary = 0;
  for (const json& t : testsOfType(vectors(), "PermuteTest")) {
    ASSERT_EQ(t.at("context"), "rational") << describe(t);
    const std::size_t k = t.at("k");
    const auto p = vecFromJson<mpq_class>(t.at("probs"));
    const auto perm = t.at("permutation").get<std::vector<std::size_t>>();
    const auto permuted = oracle::relabel(std::span<const mpq_class>(p), perm);
    const auto gates = oracle::gatesFromProbs(k, std::span<const mpq_class>(p));
    const auto permutedGates = oracle::gatesFromProbs(k, std::span<const mpq_class>(permuted));
    EXPECT_EQ(gates, vecFromJson<mpq_class>(t.at("gates"))) << describe(t);
    EXPECT_EQ(permutedGates, vecFromJson<mpq_class>(t.at("permutedGates"))) << describe(t);

    bool relabels = true;
    for (std::size_t i = 0; i < p.size(); ++i) {
      relabels = relabels && permutedGates[i] == gates[perm[i]];
    }
    EXPECT_EQ(relabels, t.at("relabels").get<bool>()) << describe(t);
    const bool noTie = oracle::noTieAtKeptBoundary(k, std::span<const mpq_class>(p));
    EXPECT_EQ(noTie, !hasFlag(t, "TieAtKeptBoundary")) << describe(t);
    if (noTie) {
      EXPECT_TRUE(relabels) << describe(t) << ": moe-gate-permute fails without a tie";
    }
    relabelled += relabels ? 1 : 0;
    tiedAtBoundary += noTie ? 0 : 1;
  }
  EXPECT_GE(relabelled, 50u);
  EXPECT_GE(tiedAtBoundary, 5u) << "the vectors must include ties at the kept boundary";
}

}  // namespace
}  // namespace moe::lean
