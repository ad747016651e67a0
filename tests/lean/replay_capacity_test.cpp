// Replay of CapacityTest, SwitchCapacityTest and BalanceTest: capacityKeeps, switchCapacity
// and switchBalance (exact rationals) of the C++ oracle equal Lean's values exactly.
#include <gtest/gtest.h>

#include <moe/oracle/capacity.hpp>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;

TEST(LeanReplayCapacity, CapacityKeepsMatchesLean) {
  const auto tests = testsOfType(vectors(), "CapacityTest");
  ASSERT_FALSE(tests.empty());
  for (const json& t : tests) {
    const auto group = t.at("group").get<std::vector<std::size_t>>();
    const auto keeps = oracle::capacityKeeps(t.at("capacity").get<std::size_t>(), group);
    EXPECT_EQ(std::vector<bool>(keeps.begin(), keeps.end()), t.at("keeps").get<std::vector<bool>>())
        << describe(t);
  }
}

TEST(LeanReplayCapacity, SeedCapacityDependsOnDevices) {
  // The seed's theorem, replayed from the vectors rather than restated: the one-device
  // case drops the second token, each of the two devices keeps its token.
  std::size_t seen = 0;
  for (const json& t : testsOfType(vectors(), "CapacityTest")) {
    const auto& flags = t.at("flags");
    if (std::find(flags.begin(), flags.end(), "SeedTheorem") == flags.end()) continue;
    ++seen;
    const auto group = t.at("group").get<std::vector<std::size_t>>();
    const auto keeps = oracle::capacityKeeps(t.at("capacity").get<std::size_t>(), group);
    if (group.size() == 2) {
      EXPECT_EQ(keeps, (std::vector<bool>{true, false}));
    } else {
      EXPECT_EQ(keeps, (std::vector<bool>{true}));
    }
  }
  EXPECT_EQ(seen, 2u);
}

TEST(LeanReplayCapacity, SwitchCapacityMatchesLean) {
  const auto tests = testsOfType(vectors(), "SwitchCapacityTest");
  ASSERT_FALSE(tests.empty());
  for (const json& t : tests) {
    EXPECT_EQ(oracle::switchCapacity(t.at("experts").get<std::size_t>(),
                                     t.at("tokens").get<std::size_t>()),
              t.at("capacity").get<std::size_t>())
        << describe(t);
  }
}

TEST(LeanReplayCapacity, SwitchBalanceMatchesLeanExactly) {
  const auto tests = testsOfType(vectors(), "BalanceTest");
  ASSERT_FALSE(tests.empty());
  for (const json& t : tests) {
    std::vector<oracle::BalanceToken> group;
    for (const auto& token : t.at("group")) {
      group.emplace_back(token.at("expert").get<std::size_t>(),
                         vecFromJson<mpq_class>(token.at("probs")));
    }
    const mpq_class expected = ratFromText(t.at("balance"));
    const mpq_class actual = oracle::switchBalance(t.at("experts").get<std::size_t>(), group);
    EXPECT_EQ(actual, expected) << describe(t) << ": oracle " << actual.get_str() << ", Lean "
                                << expected.get_str();
  }
}

}  // namespace
}  // namespace moe::lean
