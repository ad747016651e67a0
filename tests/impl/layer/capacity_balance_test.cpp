// Capacity dispatch and the Switch balancing loss per work unit: the seed's examples
// (capacity_depends_on_devices, balance_depends_on_devices), the k > 1 generalisation, and
// independence of each unit from the rest of the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "layer_reference.hpp"
#include "moe/capacity_dispatch.hpp"
#include "moe/layer.hpp"

namespace moe {
namespace {

using Mask = std::vector<std::uint8_t>;

TEST(SwitchCapacity, MatchesCeilNOverEForFactorOneAndScalesWithFactorAndK) {
  EXPECT_EQ(switchCapacity(2, 2), 1);
  EXPECT_EQ(switchCapacity(2, 1), 1);
  EXPECT_EQ(switchCapacity(3, 7), 3);
  EXPECT_EQ(switchCapacity(4, 8), 2);
  EXPECT_EQ(switchCapacity(5, 0), 0);
  EXPECT_EQ(switchCapacity(0, 9), 0);  // Lean's n / 0 = 0
  EXPECT_EQ(switchCapacity(4, 8, /*k=*/2), 4);
  EXPECT_EQ(switchCapacity(4, 8, 2, /*capacity_factor=*/1.25), 5);
  EXPECT_EQ(switchCapacity(4, 9, 1, 0.5), 2);  // ceil(1.125)
  EXPECT_EQ(switchCapacity(4, 9, 1, 0.0), 0);
  EXPECT_THROW(switchCapacity(-1, 2), std::invalid_argument);
  EXPECT_THROW(switchCapacity(2, 2, 1, -0.5), std::invalid_argument);
  EXPECT_THROW(switchCapacity(2, 2, 1, NAN), std::invalid_argument);
}

TEST(CapacityKeeps, SeedExampleOneUnitDropsTheSecondTokenTwoUnitsKeepBoth) {
  // capacity_depends_on_devices: two tokens to expert 0 of 2.
  const std::vector<std::int32_t> group{0, 0};
  EXPECT_EQ(capacityKeeps(switchCapacity(2, 2), group, 1, 2), (Mask{1, 0}));
  const std::vector<std::int32_t> one{0};
  EXPECT_EQ(capacityKeeps(switchCapacity(2, 1), one, 1, 2), (Mask{1}));
}

TEST(CapacityKeeps, TokenOrderPriorityPerExpert) {
  const std::vector<std::int32_t> group{2, 0, 2, 1, 2, 0, 2};
  EXPECT_EQ(capacityKeeps(2, group, 1, 3), (Mask{1, 1, 1, 1, 0, 1, 0}));
  EXPECT_EQ(capacityKeeps(0, group, 1, 3), (Mask(7, 0)));
  EXPECT_EQ(capacityKeeps(7, group, 1, 3), (Mask(7, 1)));
}

TEST(CapacityKeeps, KSlotsAreQueuedTokenMajorAndEmptySlotsAreNeverKept) {
  // Three tokens, k = 2: (0,1) (1,0) (0,-1); capacity 1.
  const std::vector<std::int32_t> ids{0, 1, 1, 0, 0, -1};
  EXPECT_EQ(capacityKeeps(1, ids, 2, 2), (Mask{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(capacityKeeps(2, ids, 2, 2), (Mask{1, 1, 1, 1, 0, 0}));
}

TEST(CapacityKeeps, RejectsBadIdsAndSizes) {
  const std::vector<std::int32_t> ids{0, 2};
  EXPECT_THROW(capacityKeeps(1, ids, 1, 2), std::invalid_argument);
  const std::vector<std::int32_t> odd{0, 1, 0};
  EXPECT_THROW(capacityKeeps(1, odd, 2, 2), std::invalid_argument);
  EXPECT_THROW(capacityKeeps(-1, odd, 1, 2), std::invalid_argument);
  const std::vector<std::int32_t> negative{-2};
  EXPECT_THROW(capacityKeeps(1, negative, 1, 2), std::invalid_argument);
}

TEST(SwitchBalance, SeedExampleIsOneOnOneUnitAndThreeHalvesOnEachSingleTokenUnit) {
  // balance_depends_on_devices: a = (0, [3/4, 1/4]), b = (1, [1/4, 3/4]).
  const std::vector<std::int32_t> ids{0, 1};
  const std::vector<float> probabilities{0.75f, 0.25f, 0.25f, 0.75f};
  EXPECT_EQ(switchBalance(ids, 1, probabilities, 2), 1.0);
  EXPECT_EQ(switchBalance(std::span(ids).first(1), 1, std::span(probabilities).first(2), 2), 1.5);
  EXPECT_EQ(switchBalance(std::span(ids).last(1), 1, std::span(probabilities).last(2), 2), 1.5);
  EXPECT_EQ(switchBalance({}, 1, {}, 2), 0.0);  // empty unit: Lean's x / 0 = 0
  EXPECT_THROW(switchBalance(ids, 1, std::span(probabilities).first(3), 2), std::invalid_argument);
}

TEST(SwitchBalance, UsesSlotZeroAsTheTopOneOfEachToken) {
  // k = 2: only slot 0 counts for f_e. Tokens: top-1 0, 0, 2 over E = 3.
  const std::vector<std::int32_t> ids{0, 1, 0, 2, 2, 0};
  const std::vector<float> p{0.5f, 0.25f, 0.25f, 0.5f, 0.25f, 0.25f, 0.25f, 0.25f, 0.5f};
  // f = (2/3, 0, 1/3), P = (5/12, 1/4, 1/3): 3 * (10/36 + 1/9) = 7/6.
  EXPECT_NEAR(switchBalance(ids, 2, p, 3), 7.0 / 6.0, 1e-15);
}

// A layer with d = 1, E = 2, k = 1 whose router logits are (x, -x): every token with
// x > 0 goes to expert 0. Experts are identity-like so outputs are easy to see.
Layer twoExpertLayer() {
  RowMatrix router(1, 2);
  router << 1.0f, -1.0f;
  std::vector<SwiGluExpert> experts(2);
  for (SwiGluExpert& e : experts) {
    e.w1 = RowMatrix::Constant(1, 1, 1.0f);
    e.w3 = RowMatrix::Constant(1, 1, 1.0f);
    e.w2 = RowMatrix::Constant(1, 1, 1.0f);
  }
  return Layer(router, experts, 1);
}

TEST(LayerCapacity, SeedExampleThroughTheLayerDropsToZeroOutput) {
  const Layer layer = twoExpertLayer();
  RowMatrix x(2, 1);
  x << 1.0f, 2.0f;  // both to expert 0
  const CapacityForward one_unit = layer.forwardCapacity(x, CapacityOptions::withFactor(2));
  EXPECT_EQ(one_unit.keep, (Mask{1, 0}));
  EXPECT_EQ(one_unit.unit_capacity, (std::vector<std::int64_t>{1}));
  EXPECT_NE(one_unit.output(0, 0), 0.0f);
  EXPECT_EQ(one_unit.output(1, 0), 0.0f);  // every slot dropped: output 0
  const CapacityForward two_units = layer.forwardCapacity(x, CapacityOptions::withFactor(1));
  EXPECT_EQ(two_units.keep, (Mask{1, 1}));
  const RowMatrix sparse = layer.forwardSparse(x);
  EXPECT_EQ(two_units.output(0, 0), sparse(0, 0));
  EXPECT_EQ(two_units.output(1, 0), sparse(1, 0));
  EXPECT_EQ(two_units.output(0, 0), one_unit.output(0, 0));
}

TEST(LayerCapacity, SeedBalanceExampleThroughTheLayer) {
  const Layer layer = twoExpertLayer();
  // Logits (x, -x) with 2x = ln 3 give probabilities (3/4, 1/4); -x gives (1/4, 3/4).
  const float x0 = static_cast<float>(std::log(3.0) / 2);
  RowMatrix x(2, 1);
  x << x0, -x0;
  const CapacityForward one = layer.forwardCapacity(x, CapacityOptions::withFactor(2));
  ASSERT_EQ(one.unit_balance_loss.size(), 1u);
  EXPECT_NEAR(one.unit_balance_loss[0], 1.0, 1e-6);
  EXPECT_NEAR(one.probabilities(0, 0), 0.75, 1e-6);
  const CapacityForward split = layer.forwardCapacity(x, CapacityOptions::withFactor(1));
  ASSERT_EQ(split.unit_balance_loss.size(), 2u);
  EXPECT_NEAR(split.unit_balance_loss[0], 1.5, 1e-6);
  EXPECT_NEAR(split.unit_balance_loss[1], 1.5, 1e-6);
}

TEST(LayerCapacity, ZeroCapacityDropsEverythingAndAFixedCapacityOverridesTheFactor) {
  const Layer layer = Layer::random({6, 6, 4, 2}, 3);
  const RowMatrix x = test::randomTokens(10, 6, 4);
  const CapacityForward none = layer.forwardCapacity(x, CapacityOptions::withCapacity(5, 0));
  EXPECT_EQ(none.keep, Mask(20, 0));
  EXPECT_TRUE(none.output.isZero(0));
  const CapacityForward all = layer.forwardCapacity(x, CapacityOptions::withCapacity(5, 5));
  EXPECT_EQ(all.keep, Mask(20, 1));
  const RowMatrix sparse = layer.forwardSparse(x);
  // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bit-identical output is the claim
  EXPECT_EQ(std::memcmp(all.output.data(), sparse.data(), sizeof(float) * 60), 0);
  EXPECT_THROW(layer.forwardCapacity(x, CapacityOptions::withFactor(0)), std::invalid_argument);
  EXPECT_THROW(layer.forwardCapacity(x, CapacityOptions::withCapacity(2, -1)),
               std::invalid_argument);
}

TEST(LayerCapacity, DroppedSlotsContributeNothingAndKeptGatesAreNotRenormalised) {
  const Layer layer = Layer::random({6, 6, 4, 2}, 8);
  const RowMatrix x = test::randomTokens(12, 6, 9);
  const CapacityForward forward = layer.forwardCapacity(x, CapacityOptions::withCapacity(6, 1));
  // Replay: zero the gates of dropped slots and compare with the double reference.
  Routing kept_only = forward.routing;
  for (std::size_t s = 0; s < kept_only.gates.size(); ++s) {
    if (!forward.keep[s]) kept_only.gates[s] = 0.0f;
  }
  const std::vector<double> reference = test::referenceForward(layer, x, kept_only);
  for (std::int64_t i = 0; i < forward.output.size(); ++i) {
    ASSERT_NEAR(forward.output.data()[i], reference[static_cast<std::size_t>(i)], 1e-5);
  }
  // Each unit's keep mask is capacityKeeps on the unit's own ids.
  for (std::int64_t u = 0; u < 2; ++u) {
    const std::span<const std::int32_t> ids(forward.routing.ids.data() + u * 12, 12);
    const Mask expected = capacityKeeps(1, ids, 2, 4);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), forward.keep.begin() + u * 12));
  }
}

TEST(LayerCapacity, EachUnitIsIndependentOfTheRestOfTheBatch) {
  const Layer layer = Layer::random({8, 10, 4, 2}, 12);
  const std::int64_t tokens = 40, unit = 8, d = 8;
  const RowMatrix x = test::randomTokens(tokens, d, 13);
  const CapacityOptions options = CapacityOptions::withFactor(unit, 1.0);
  const CapacityForward full = layer.forwardCapacity(x, options);
  ASSERT_EQ(full.unit_balance_loss.size(), 5u);
  for (std::int64_t split : {8, 16, 24, 32}) {
    const CapacityForward head = layer.forwardCapacity(RowMatrix(x.topRows(split)), options);
    const CapacityForward tail =
        layer.forwardCapacity(RowMatrix(x.bottomRows(tokens - split)), options);
    Mask keep = head.keep;
    keep.insert(keep.end(), tail.keep.begin(), tail.keep.end());
    EXPECT_EQ(keep, full.keep) << "split " << split;
    std::vector<double> loss = head.unit_balance_loss;
    loss.insert(loss.end(), tail.unit_balance_loss.begin(), tail.unit_balance_loss.end());
    EXPECT_EQ(loss, full.unit_balance_loss) << "split " << split;
    EXPECT_EQ(std::memcmp(head.output.data(), full.output.data(), sizeof(float) * split * d), 0);
    EXPECT_EQ(std::memcmp(tail.output.data(), full.output.data() + split * d,
                          sizeof(float) * (tokens - split) * d),
              0)
        << "split " << split;
  }
  // A shorter last unit is a unit of its own size: 40 = 3 * 12 + 4.
  const CapacityForward ragged = layer.forwardCapacity(x, CapacityOptions::withFactor(12));
  EXPECT_EQ(ragged.unit_capacity,
            (std::vector<std::int64_t>{switchCapacity(4, 12, 2), switchCapacity(4, 12, 2),
                                       switchCapacity(4, 12, 2), switchCapacity(4, 4, 2)}));
}

}  // namespace
}  // namespace moe
