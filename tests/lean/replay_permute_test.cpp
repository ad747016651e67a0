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

// moe-gate-permute for the softmax alone, over ℚ with Lean's rational stand-in for exp: the
// oracle's softmaxVecSpecWith, given Lean's exps (and passing exp Lean's arguments), gives
// Lean's softmax of the logits and of the relabelled logits, and it always relabels.
TEST(LeanReplayPermute, SoftmaxAloneAlwaysRelabels) {
  std::size_t seen = 0, tied = 0;
  for (const json& t : testsOfType(vectors(), "SoftmaxPermuteTest")) {
    ASSERT_EQ(t.at("context"), "rational") << describe(t);
    const auto l = vecFromJson<mpq_class>(t.at("logits"));
    const auto perm = t.at("permutation").get<std::vector<std::size_t>>();
    const auto permuted = oracle::relabel(std::span<const mpq_class>(l), perm);
    const auto exps = vecFromJson<mpq_class>(t.at("exps"));
    const auto permutedExps = vecFromJson<mpq_class>(t.at("permutedExps"));
    std::vector<mpq_class> arguments;
    const auto sm = oracle::softmaxVecSpecWith(std::span<const mpq_class>(l),
                                               ReplayedExp<mpq_class>{exps, &arguments});
    EXPECT_EQ(expArgumentMismatch(l, ratFromText(t.at("max")), arguments), "") << describe(t);
    arguments.clear();
    const auto smPermuted = oracle::softmaxVecSpecWith(
        std::span<const mpq_class>(permuted), ReplayedExp<mpq_class>{permutedExps, &arguments});
    EXPECT_EQ(expArgumentMismatch(permuted, ratFromText(t.at("permutedMax")), arguments), "")
        << describe(t);
    EXPECT_EQ(sm, vecFromJson<mpq_class>(t.at("softmax"))) << describe(t);
    EXPECT_EQ(smPermuted, vecFromJson<mpq_class>(t.at("permutedSoftmax"))) << describe(t);
    EXPECT_TRUE(t.at("relabels").get<bool>()) << describe(t) << ": Lean's softmax did not relabel";
    for (std::size_t i = 0; i < l.size(); ++i) {
      EXPECT_EQ(smPermuted[i], sm[perm[i]]) << describe(t) << " i=" << i;
    }
    ++seen;
    for (std::size_t i = 1; i < l.size(); ++i) tied += l[i] == l[0] ? 1 : 0;
  }
  EXPECT_GE(seen, 50u);
  EXPECT_GE(tied, 5u) << "ties must be among them (relabelling needs no tie condition)";
}

}  // namespace
}  // namespace moe::lean
