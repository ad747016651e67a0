// The seeds' concrete facts about capacity and balancing, exactly as stated, plus the
// definitions' edge cases.
#include <gtest/gtest.h>

#include "moe/oracle/capacity.hpp"

namespace moe::oracle {
namespace {

// capacity_depends_on_devices: two tokens routed to expert 0 of 2.
TEST(Capacity, CapacityDependsOnDevices) {
  const std::vector<std::size_t> both{0, 0}, one{0};
  EXPECT_EQ(switchCapacity(2, 2), 1u);
  EXPECT_EQ(switchCapacity(2, 1), 1u);
  EXPECT_EQ(capacityKeeps(switchCapacity(2, 2), both), (std::vector<bool>{true, false}));
  std::vector<bool> split = capacityKeeps(switchCapacity(2, 1), one);
  const std::vector<bool> second = capacityKeeps(switchCapacity(2, 1), one);
  split.insert(split.end(), second.begin(), second.end());
  EXPECT_EQ(split, (std::vector<bool>{true, true}));
}

TEST(Capacity, SwitchCapacityIsCeilOfNOverE) {
  EXPECT_EQ(switchCapacity(4, 0), 0u);
  EXPECT_EQ(switchCapacity(4, 1), 1u);
  EXPECT_EQ(switchCapacity(4, 8), 2u);
  EXPECT_EQ(switchCapacity(4, 9), 3u);
  EXPECT_EQ(switchCapacity(3, 7), 3u);
  EXPECT_EQ(switchCapacity(0, 5), 0u);  // Lean's Nat division by zero
}

TEST(Capacity, KeepsTheFirstCTokensOfEachExpert) {
  const std::vector<std::size_t> group{2, 0, 2, 2, 0, 1};
  EXPECT_EQ(capacityKeeps(2, group), (std::vector<bool>{true, true, true, false, true, true}));
  EXPECT_EQ(capacityKeeps(0, group), std::vector<bool>(6, false));
  EXPECT_TRUE(capacityKeeps(3, std::vector<std::size_t>{}).empty());
}

// balance_depends_on_devices: a = (0, [3/4, 1/4]), b = (1, [1/4, 3/4]).
TEST(Balance, BalanceDependsOnDevices) {
  const BalanceToken a{0, {mpq_class(3, 4), mpq_class(1, 4)}};
  const BalanceToken b{1, {mpq_class(1, 4), mpq_class(3, 4)}};
  const std::vector<BalanceToken> ab{a, b}, onlyA{a}, onlyB{b};
  EXPECT_EQ(switchBalance(2, ab), mpq_class(1));
  EXPECT_EQ(switchBalance(2, onlyA), mpq_class(3, 2));
  EXPECT_EQ(switchBalance(2, onlyB), mpq_class(3, 2));
  EXPECT_EQ((switchBalance(2, onlyA) + switchBalance(2, onlyB)) / 2, mpq_class(3, 2));
}

TEST(Balance, EmptyGroupAndBadInput) {
  EXPECT_EQ(switchBalance(2, std::vector<BalanceToken>{}), mpq_class(0));
  const std::vector<BalanceToken> outOfRange{{2, {mpq_class(1, 2), mpq_class(1, 2)}}};
  EXPECT_THROW(switchBalance(2, outOfRange), SpecError);
  const std::vector<BalanceToken> shortProbs{{0, {mpq_class(1)}}};
  EXPECT_THROW(switchBalance(2, shortProbs), SpecError);
}

}  // namespace
}  // namespace moe::oracle
