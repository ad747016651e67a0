// moe_route_v1_bf16: bf16 in, binary32 compute; bitwise the auto-probs router on the
// exactly widened logits, with the same argument rules.
#include "moe/route_bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "moe/routers.hpp"
#include "moe/test/seed.hpp"
#include "route_helpers.hpp"

namespace moe::test {
namespace {

float widen(uint16_t bf16) {
  return std::bit_cast<float>(uint32_t{bf16} << 16);
}

TEST(RouteBf16, MatchesTheFp32PathOnWidenedValues) {
  std::mt19937 rng = testRng();
  std::normal_distribution<float> logit(0.0f, 3.0f);
  for (const int32_t experts : {1, 8, 33, 64, 256}) {
    for (const int32_t k : {1, 2, 8, 300}) {
      const int32_t tokens = 97;
      std::vector<uint16_t> bf(size_t(tokens) * experts);
      for (auto& v : bf) v = uint16_t(std::bit_cast<uint32_t>(logit(rng)) >> 16);
      bf[3] = 0xFF80;              // -inf: a masked expert
      bf[bf.size() - 1] = 0x7FC0;  // NaN: the last token's row is non-finite
      bf[bf.size() / 2] = 0x8000;  // -0
      std::vector<float> widened(bf.size());
      for (size_t i = 0; i < bf.size(); ++i) widened[i] = widen(bf[i]);
      const Routed fp32 = routeOrDie(*findRouter("auto-probs"), tokens, experts, k, widened, 0);
      std::vector<int32_t> ids(size_t(tokens) * k);
      std::vector<float> gates(ids.size());
      ASSERT_EQ(moe_route_v1_bf16(tokens, experts, k, bf.data(), ids.data(), gates.data()), 0);
      EXPECT_EQ(ids, fp32.ids) << "E=" << experts << " k=" << k;
      EXPECT_EQ(std::memcmp(gates.data(), fp32.gates.data(), gates.size() * sizeof(float)), 0);
    }
  }
}

TEST(RouteBf16, RejectsBadArgumentsLikeTheFp32Abi) {
  const std::vector<uint16_t> bf(8, 0x3F80);  // 1.0
  int32_t ids[4];
  float gates[4];
  EXPECT_EQ(moe_route_v1_bf16(-1, 4, 2, bf.data(), ids, gates), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(moe_route_v1_bf16(2, 4, 2, nullptr, ids, gates), MOE_ROUTE_ENULL);
  EXPECT_EQ(moe_route_v1_bf16(2, 4, 2, bf.data(), nullptr, gates), MOE_ROUTE_ENULL);
  EXPECT_EQ(moe_route_v1_bf16(0x7FFFFFFF, 0x7FFFFFFF, 1, bf.data(), ids, gates),
            MOE_ROUTE_EOVERFLOW);
  EXPECT_EQ(moe_route_v1_bf16(0, 4, 2, nullptr, nullptr, nullptr), MOE_ROUTE_OK);
  ASSERT_EQ(moe_route_v1_bf16(2, 4, 2, bf.data(), ids, gates), MOE_ROUTE_OK);
  EXPECT_EQ(ids[0], 0);  // all equal: lower indices win
  EXPECT_EQ(ids[1], 1);
  EXPECT_EQ(gates[0], 0.5f);
}

}  // namespace
}  // namespace moe::test
