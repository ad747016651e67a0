// The dispatch verdict on hand-built outputs: the spec's own layout passes, each planted
// mistake is its kind, and the statuses are judged as layer_abi.h says. The spec's layout is
// written out by hand here (not taken from the oracle), so a wrong dispatchSpec fails too.
#include "moe/fuzz/dispatch_verdict.hpp"

#include <gtest/gtest.h>

#include "moe/fuzz/contract.hpp"
#include "moe/oracle/dispatch.hpp"

namespace moe::fuzz {
namespace {

// T = 3 tokens, k = 2: slots 0..5 with experts [1, 0, 1, -1, 2, 1], E = 3, block 2.
// Expert 0: slot 1, then padding (6); expert 1: slots 0, 2, 5, padding; expert 2: slot 4,
// padding. rows = 2 + 4 + 2 = 8; block_expert = [0, 1, 1, 2].
DispatchCase smallCase(int32_t capacity = -1) {
  DispatchCase c;
  c.tokens = 3;
  c.k = 2;
  c.experts = 3;
  c.block = 2;
  c.capacity = capacity;
  c.maxRows = 12;
  c.ids = {1, 0, 1, -1, 2, 1};
  return c;
}

DispatchOutput outputOf(const DispatchCase& c, std::vector<int32_t> sorted,
                        std::vector<int32_t> blocks, int32_t rows) {
  DispatchOutput out;
  out.sortedSlots.assign(c.sortedEntries(), kDispatchUnwritten);
  out.blockExpert.assign(c.blockExpertEntries(), kDispatchUnwritten);
  std::copy(sorted.begin(), sorted.end(), out.sortedSlots.begin());
  std::copy(blocks.begin(), blocks.end(), out.blockExpert.begin());
  out.rows = rows;
  return out;
}

ViolationKind kindOf(const DispatchCase& c, const DispatchOutput& out,
                     WithinExpertOrder order = WithinExpertOrder::kSlot) {
  const DispatchVerdict v = judgeDispatch(c, out, order);
  return v.kind;
}

TEST(DispatchSpec, ListsEachExpertsKeptSlotsPaddedToTheBlock) {
  const DispatchCase c = smallCase();
  const std::vector<int64_t> ids(c.ids.begin(), c.ids.end());
  const auto l = oracle::dispatchSpec(3, 2, std::nullopt, ids);
  EXPECT_EQ(l.sortedSlots, (std::vector<size_t>{1, 6, 0, 2, 5, 6, 4, 6}));
  EXPECT_EQ(l.blockExpert, (std::vector<size_t>{0, 1, 1, 2}));
  // Capacity 2: expert 1 keeps its first two slots (0 and 2) and drops slot 5.
  const auto capped = oracle::dispatchSpec(3, 2, 2, ids);
  EXPECT_EQ(capped.sortedSlots, (std::vector<size_t>{1, 6, 0, 2, 4, 6}));
  EXPECT_EQ(capped.blockExpert, (std::vector<size_t>{0, 1, 2}));
  // Capacity 0 keeps nothing; an expert with no slot takes no block.
  EXPECT_EQ(oracle::dispatchSpec(3, 2, 0, ids).rows(), 0u);
}

TEST(DispatchVerdict, TheSpecsLayoutPasses) {
  const DispatchCase c = smallCase();
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 5, 6, 4, 6}, {0, 1, 1, 2}, 8)),
            ViolationKind::kNone);
}

TEST(DispatchVerdict, EachPlantedMistakeIsItsKind) {
  const DispatchCase c = smallCase();
  // Slot 5 missing (its place holds padding).
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 6, 6, 4, 6}, {0, 1, 1, 2}, 8)),
            ViolationKind::kDroppedSlot);
  // Slot 1 again in expert 0's padding place.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 1, 0, 2, 5, 6, 4, 6}, {0, 1, 1, 2}, 8)),
            ViolationKind::kDuplicatedSlot);
  // Experts 1 and 2 swapped in block_expert: slot 4 sits in a block of expert 1.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 4, 6, 0, 2, 5, 6}, {0, 2, 1, 1}, 8)),
            ViolationKind::kWrongExpert);
  // The last expert's padding left unwritten.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 5, 6, 4}, {0, 1, 1, 2}, 8)),
            ViolationKind::kBadPadding);
  // The last list not padded: rows 7.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 5, 6, 4}, {0, 1, 1, 2}, 7)),
            ViolationKind::kBadPadding);
  // Padding before a slot within expert 1.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 6, 2, 5, 4, 6}, {0, 1, 1, 2}, 8)),
            ViolationKind::kBadPadding);
  // A whole extra block of padding for expert 0: rows 10.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 6, 6, 0, 2, 5, 6, 4, 6}, {0, 0, 1, 1, 2}, 10)),
            ViolationKind::kRowsCount);
  // rows short of the list: slot 4 sits past it.
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 5, 6, 4, 6}, {0, 1, 1, 2}, 6)),
            ViolationKind::kRowsCount);
  // Expert 1's slots out of slot order: slot-order, unless the contract says "any".
  const DispatchOutput swapped = outputOf(c, {1, 6, 2, 0, 5, 6, 4, 6}, {0, 1, 1, 2}, 8);
  EXPECT_EQ(kindOf(c, swapped), ViolationKind::kSlotOrder);
  EXPECT_EQ(kindOf(c, swapped, WithinExpertOrder::kAny), ViolationKind::kNone);
}

TEST(DispatchVerdict, CapacityKeepsTheFirstSlotsInSlotOrder) {
  const DispatchCase c = smallCase(2);
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 0, 2, 4, 6}, {0, 1, 2}, 6)), ViolationKind::kNone);
  // Keeping expert 1's last two slots (2 and 5) instead of its first two (0 and 2).
  EXPECT_EQ(kindOf(c, outputOf(c, {1, 6, 2, 5, 4, 6}, {0, 1, 2}, 6)),
            ViolationKind::kCapacityOrder);
}

TEST(DispatchVerdict, StatusesOutsideTheDomain) {
  DispatchCase c = smallCase();
  c.block = 0;
  DispatchOutput refused = outputOf(c, {}, {}, kDispatchUnwritten);
  refused.status = 6;
  EXPECT_EQ(kindOf(c, refused), ViolationKind::kNone);
  DispatchOutput accepted = outputOf(c, {1, 6}, {}, 2);
  EXPECT_EQ(kindOf(c, accepted), ViolationKind::kBadParamsAccepted);
  DispatchOutput written = outputOf(c, {1}, {}, kDispatchUnwritten);
  written.status = 6;
  EXPECT_EQ(kindOf(c, written), ViolationKind::kBadParamsWritten);
  DispatchOutput wrong = refused;
  wrong.status = 4;
  EXPECT_EQ(kindOf(c, wrong), ViolationKind::kBadParamsWrongStatus);
  // max_rows one short of the 8 rows: EOVERFLOW.
  DispatchCase tight = smallCase();
  tight.maxRows = 7;
  ASSERT_EQ(dueStatuses(tight).size(), 1u);
  EXPECT_EQ(dueStatuses(tight)[0].status, 3);
  // An id out of range, and NULL rows: either status is right.
  DispatchCase two = smallCase();
  two.ids[2] = 3;
  two.nullRows = true;
  DispatchOutput null = outputOf(two, {}, {}, kDispatchUnwritten);
  null.status = 2;
  EXPECT_EQ(kindOf(two, null), ViolationKind::kNone);
  null.status = 6;
  EXPECT_EQ(kindOf(two, null), ViolationKind::kNone);
  // A status the ABI does not define; EUNSUPPORTED inside the domain abstains.
  DispatchOutput odd = outputOf(smallCase(), {}, {}, kDispatchUnwritten);
  odd.status = 77;
  EXPECT_EQ(kindOf(smallCase(), odd), ViolationKind::kBadStatus);
  odd.status = 4;
  EXPECT_TRUE(judgeDispatch(smallCase(), odd, WithinExpertOrder::kSlot).abstained);
}

}  // namespace
}  // namespace moe::fuzz

namespace moe::fuzz {
namespace {

// The dispatch contract is read with the router's schema: its own fields, nothing else.
TEST(DispatchContract, ReadsItsFieldsAndRefusesARoutersOnes) {
  const DispatchContract c = parseDispatchContract(
      R"({"abi": "moe_dispatch_v1", "name": "mine", "within_expert_order": "any",
          "shapes": {"block": [16, "64-128"], "capacity": [-1, "0-8"], "k": [8]}})");
  EXPECT_EQ(c.name, "mine");
  EXPECT_EQ(c.order, WithinExpertOrder::kAny);
  EXPECT_TRUE(c.shapes.block.contains(96));
  EXPECT_FALSE(c.shapes.block.contains(32));
  EXPECT_TRUE(c.shapes.capacity.contains(-1));
  EXPECT_EQ(parseDispatchContractJSON(dispatchContractJSON(c)).shapes.block.text(),
            c.shapes.block.text());
  EXPECT_THROW(parseDispatchContract(R"({"selects_on": "logits"})"), std::invalid_argument);
  EXPECT_THROW(parseDispatchContract(R"({"within_expert_order": "random"})"),
               std::invalid_argument);
  EXPECT_THROW(parseDispatchContract(R"({"shapes": {"max_tokens": 4}})"), std::invalid_argument);
  EXPECT_THROW(parseDispatchContract(R"({"abi": "moe_route_v1"})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"within_expert_order": "slot"})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"abi": "moe_dispatch_v1"})"), std::invalid_argument);
}

}  // namespace
}  // namespace moe::fuzz
