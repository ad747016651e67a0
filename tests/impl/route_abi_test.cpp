// The C ABI's argument rules (route_abi.h), checked on every router: rejected arguments
// return the documented code and write nothing; accepted ones write exactly tokens*k slots.
#include "moe/route_abi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "moe/routers.hpp"
#include "router_params.hpp"

namespace moe::test {
namespace {

constexpr int32_t kCanaryId = 0x5A5A5A5A;
constexpr float kCanaryGate = 12345.0f;

// Output buffers with guard slots before and after, to see any write out of bounds.
struct Guarded {
  static constexpr size_t kGuard = 16;
  std::vector<int32_t> ids;
  std::vector<float> gates;
  explicit Guarded(size_t slots)
      : ids(slots + 2 * kGuard, kCanaryId), gates(slots + 2 * kGuard, kCanaryGate) {}
  int32_t* idsAt() { return ids.data() + kGuard; }
  float* gatesAt() { return gates.data() + kGuard; }
  bool untouched(size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i) {
      if (ids[i] != kCanaryId || gates[i] != kCanaryGate) return false;
    }
    return true;
  }
  bool guardsIntact(size_t slots) const {
    return untouched(0, kGuard) && untouched(kGuard + slots, slots + 2 * kGuard);
  }
};

class RouterAbi : public RouterTest {};

TEST_P(RouterAbi, NegativeSizesAreRejectedAndNothingIsWritten) {
  const std::vector<float> x(64, 1.0f);
  Guarded out(8);
  EXPECT_EQ(router_->route(-1, 4, 2, x.data(), out.idsAt(), out.gatesAt(), 1), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(router_->route(2, -4, 2, x.data(), out.idsAt(), out.gatesAt(), 1), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(router_->route(2, 4, -2, x.data(), out.idsAt(), out.gatesAt(), 1), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(router_->route(2, 4, 2, x.data(), out.idsAt(), out.gatesAt(), -1), MOE_ROUTE_EBADSIZE);
  EXPECT_TRUE(out.untouched(0, out.ids.size()));
}

TEST_P(RouterAbi, NullPointersAreRejectedWhereDataIsNeeded) {
  const std::vector<float> x(8, 1.0f);
  Guarded out(4);
  EXPECT_EQ(router_->route(2, 4, 2, nullptr, out.idsAt(), out.gatesAt(), 1), MOE_ROUTE_ENULL);
  EXPECT_EQ(router_->route(2, 4, 2, x.data(), nullptr, out.gatesAt(), 1), MOE_ROUTE_ENULL);
  EXPECT_EQ(router_->route(2, 4, 2, x.data(), out.idsAt(), nullptr, 1), MOE_ROUTE_ENULL);
  EXPECT_TRUE(out.untouched(0, out.ids.size()));
  // Empty shapes need no data.
  EXPECT_EQ(router_->route(0, 4, 2, nullptr, nullptr, nullptr, 1), MOE_ROUTE_OK);
  EXPECT_EQ(router_->route(2, 4, 0, x.data(), nullptr, nullptr, 1), MOE_ROUTE_OK);
  EXPECT_EQ(router_->route(2, 0, 2, nullptr, out.idsAt(), out.gatesAt(), 1), MOE_ROUTE_OK);
}

TEST_P(RouterAbi, OverflowingSizesAreRejected) {
  const float x = 0;
  int32_t id = kCanaryId;
  float gate = kCanaryGate;
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(router_->route(kMax, kMax, 1, &x, &id, &gate, 1), MOE_ROUTE_EOVERFLOW);
  EXPECT_EQ(router_->route(kMax, 1 << 30, 1, &x, &id, &gate, 1), MOE_ROUTE_EOVERFLOW);
  EXPECT_EQ(router_->route(kMax, 1, kMax, &x, &id, &gate, 1), MOE_ROUTE_EOVERFLOW);
  EXPECT_EQ(id, kCanaryId);
  EXPECT_EQ(gate, kCanaryGate);
}

TEST_P(RouterAbi, WritesExactlyTokensTimesKSlots) {
  for (const int32_t experts : {1, 7, 16, 33}) {
    for (const int32_t k : {1, 2, 8, 40}) {
      const int32_t tokens = 3;
      std::vector<float> x(size_t(tokens) * experts);
      for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 11) - 5.0f;
      const size_t slots = size_t(tokens) * k;
      Guarded out(slots);
      ASSERT_EQ(router_->route(tokens, experts, k, x.data(), out.idsAt(), out.gatesAt(), 1), 0);
      EXPECT_TRUE(out.guardsIntact(slots)) << "E=" << experts << " k=" << k;
      for (size_t s = 0; s < slots; ++s) {
        EXPECT_NE(out.idsAt()[s], kCanaryId);
        EXPECT_GE(out.idsAt()[s], -1);
        EXPECT_LT(out.idsAt()[s], experts);
      }
    }
  }
}

TEST(RouterRegistry, ListsEightNamedRoutersAndFindsThem) {
  EXPECT_EQ(builtinRouters().size(), 8u);
  for (const auto& r : builtinRouters()) {
    EXPECT_EQ(findRouter(r.name), &r);
    EXPECT_NE(r.contract_json.find("\"name\": \"" + std::string(r.name) + "\""), std::string::npos);
  }
  EXPECT_EQ(findRouter("avx1024-probs"), nullptr);
  EXPECT_TRUE(findRouter("scalar-probs")->available());
  EXPECT_TRUE(findRouter("auto-logits")->available());
}

INSTANTIATE_TEST_SUITE_P(AllRouters, RouterAbi, allBuiltinRouters(), routerTestName);

}  // namespace
}  // namespace moe::test
