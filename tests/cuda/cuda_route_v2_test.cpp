// The CUDA router's moe_route_v2 (the routing family) through its ABI: the contract and the
// argument rules, which need no GPU and always run, and DeepSeek-V3's router on the GPU
// (skipped without one) against the oracle's binary32 evaluation of the family.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <vector>

#include "moe/cuda/route_cuda.hpp"
#include "moe/oracle/family.hpp"
#include "moe/route_abi.h"
#include "moe/test/seed.hpp"

namespace {

moe_route_params_v2 params(int32_t tokens, int32_t experts, int32_t k) {
  moe_route_params_v2 p{};
  p.struct_size = sizeof p;
  p.tokens = tokens;
  p.experts = experts;
  p.k = k;
  p.score = MOE_SCORE_SIGMOID;
  p.groups = 1;
  p.topk_groups = 1;
  p.group_score = MOE_GROUP_MAX;
  p.renormalize = 1;
  p.scale = 1.0f;
  return p;
}

TEST(CudaV2Contract, IsJsonWithTheFamilies) {
  const nlohmann::json contract = nlohmann::json::parse(moe_route_v2_contract());
  EXPECT_EQ(contract.at("abi"), "moe_route_v2");
  EXPECT_EQ(contract.at("families").at("scores"), nlohmann::json({"softmax", "sigmoid"}));
  EXPECT_EQ(contract.at("families").at("groups"), true);
  EXPECT_EQ(contract.at("families").at("bias"), true);
  EXPECT_EQ(contract.at("shapes").at("experts"), nlohmann::json({"0-1024"}));
}

TEST(CudaV2Arguments, BadParametersAreRejectedBeforeAnyDeviceWork) {
  float logits[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::int32_t ids[2] = {9, 9};
  float gates[2] = {9, 9};
  EXPECT_EQ(moe_route_v2(nullptr, logits, ids, gates), MOE_ROUTE_ENULL);
  moe_route_params_v2 p = params(1, 8, 2);
  p.struct_size -= 4;
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(1, 8, 2);
  p.groups = 3;  // does not divide 8
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(1, 8, 2);
  p.groups = 4;
  p.topk_groups = 5;
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(1, 8, 2);
  p.groups = 8;
  p.group_score = MOE_GROUP_TOP2_SUM;  // groups of one have no second key
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(1, 8, 2);
  p.scale = std::nanf("");
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(1, 8, 2);
  p.score = 2;
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADPARAMS);
  p = params(-1, 8, 2);
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EBADSIZE);
  p = params(1, 8, 2);
  EXPECT_EQ(moe_route_v2(&p, nullptr, ids, gates), MOE_ROUTE_ENULL);
  EXPECT_EQ(ids[0], 9);  // a rejected call writes nothing
  EXPECT_EQ(gates[1], 9.0f);
  // E = 0: every slot empty, answered on the host; E > 1024: not this kernel's shape.
  p = params(1, 0, 2);
  EXPECT_EQ(moe_route_v2(&p, nullptr, ids, gates), MOE_ROUTE_OK);
  EXPECT_EQ(ids[0], -1);
  EXPECT_EQ(gates[1], 0.0f);
  std::vector<float> wide(1025, 0.0f);
  p = params(1, 1025, 2);
  EXPECT_EQ(moe_route_v2(&p, wide.data(), ids, gates), MOE_ROUTE_EUNSUPPORTED);
}

TEST(CudaV2Arguments, WithoutAGpuTheRouterSaysUnsupportedAndWritesNothing) {
  if (moe::cuda::unavailableReason().empty()) GTEST_SKIP() << "a GPU is present";
  float logits[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::int32_t ids[2] = {9, 9};
  float gates[2] = {9, 9};
  const moe_route_params_v2 p = params(1, 8, 2);
  EXPECT_EQ(moe_route_v2(&p, logits, ids, gates), MOE_ROUTE_EUNSUPPORTED);
  EXPECT_EQ(ids[0], 9);
}

// DeepSeek-V3 (E = 256, k = 8, sigmoid, bias, 8 groups, top 4 by top-2 sum, renormalised,
// scale 2.5), 1,000 tokens of logits on a grid of step 1/32 (distinct, far from ties after
// the sigmoid and the bias): the kept experts are the binary32 spec's exactly, the gates
// within the contract's 64 ulp.
TEST(CudaV2Gpu, DeepSeekV3IsTheSpecsDecision) {
  const std::string why = moe::cuda::unavailableReason();
  if (!why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  constexpr int32_t kTokens = 1000, kExperts = 256, kK = 8;
  std::mt19937 rng = moe::test::testRng();
  std::vector<float> logits, bias(kExperts);
  for (int32_t e = 0; e < kExperts; ++e) bias[e] = 0.0009765625f * static_cast<float>(e % 5);
  for (int32_t t = 0; t < kTokens; ++t) {
    std::vector<float> row(kExperts);
    for (int32_t e = 0; e < kExperts; ++e) row[e] = -4.0f + 0.03125f * static_cast<float>(e);
    std::shuffle(row.begin(), row.end(), rng);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  moe_route_params_v2 p = params(kTokens, kExperts, kK);
  p.bias = bias.data();
  p.groups = 8;
  p.topk_groups = 4;
  p.group_score = MOE_GROUP_TOP2_SUM;
  p.scale = 2.5f;
  std::vector<std::int32_t> ids(kTokens * kK, -7);
  std::vector<float> gates(kTokens * kK, -7.0f);
  ASSERT_EQ(moe_route_v2(&p, logits.data(), ids.data(), gates.data()), MOE_ROUTE_OK);

  moe::oracle::RouteParams<float> spec;
  spec.k = kK;
  spec.score = moe::oracle::ScoreFn::sigmoid;
  spec.bias = bias;
  spec.groups = 8;
  spec.topkGroups = 4;
  spec.groupScore = moe::oracle::GroupScore::top2Sum;
  spec.renormalize = true;
  spec.scale = 2.5f;
  for (int32_t t = 0; t < kTokens; ++t) {
    const std::span<const float> row(logits.data() + t * kExperts, kExperts);
    const std::vector<float> s = moe::oracle::scoresSpec(spec.score, row);
    const std::vector<float> c = moe::oracle::biasedKeys(spec.bias, std::span<const float>(s));
    const std::vector<std::size_t> kept = moe::oracle::routeKeptExperts(spec, std::span(c));
    const std::vector<float> dense = moe::oracle::routeGatesFromScores(
        spec, std::span<const float>(s), std::span<const float>(c));
    ASSERT_EQ(kept.size(), static_cast<std::size_t>(kK));
    for (int32_t slot = 0; slot < kK; ++slot) {
      const std::int32_t id = ids[t * kK + slot];
      ASSERT_EQ(id, static_cast<std::int32_t>(kept[slot])) << "token " << t << " slot " << slot;
      const float want = dense[static_cast<std::size_t>(id)];
      EXPECT_NEAR(gates[t * kK + slot], want, 64 * std::nextafter(want, INFINITY) - 64 * want)
          << "token " << t << " slot " << slot;
    }
  }
}

}  // namespace
