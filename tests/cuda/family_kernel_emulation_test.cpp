// The CUDA router's family kernel (route_family_kernel.cuh, moe_route_v2) compiled by the
// host compiler, each warp's lanes on threads (warp_emulation.hpp), judged by the fuzzer's
// judge (EXPECT_ROUTE_MATCH) under the CUDA router's own contract: the kernel's logic —
// groups, bias, the tie rules, the gates — is checked on every machine, GPU or not. What
// it cannot check: CUDA's expf and nvcc's code (cuda_route_test.cpp does, on a GPU).
#include "warp_emulation.hpp"
// The kernel must come after the emulation, which defines the CUDA keywords it uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/test/route_match.hpp"
#include "moe/test/seed.hpp"
#include "params_v2.hpp"
#include "route_contracts.hpp"
#include "route_family_kernel.cuh"

namespace {

using moe::cuda::detail::FamilyKernelParams;
using moe::fuzz::Case;
using moe::fuzz::Family;
using moe::fuzz::GroupScoreFunction;
using moe::fuzz::ScoreFunction;

template <int V>
void launchEmulated(const FamilyKernelParams& p, const float* logits, std::int32_t* ids,
                    float* gates) {
  using moe::cuda::detail::kWarp;
  using moe::cuda::detail::kWarpsPerBlock;
  const auto blocks = static_cast<unsigned>((p.tokens + kWarpsPerBlock - 1) / kWarpsPerBlock);
  warp_emulation::launch(blocks, kWarp * kWarpsPerBlock,
                         [&] { moe::cuda::detail::routeFamilyKernel<V>(p, logits, ids, gates); });
}

// route_family_cuda.cu's moe_route_v2 with the emulated kernel in place of the device: the
// same parameter check, the same early answers, the same choice of V.
class EmulatedCudaFamilyRouter final : public moe::fuzz::Router {
 public:
  EmulatedCudaFamilyRouter()
      : Router("cuda-emulated", moe::fuzz::parseContract(moe::cuda::detail::kFamilyContract)) {}

 protected:
  int call(int32_t, int32_t, int32_t, const float*, int32_t*, float*, int32_t) const override {
    return MOE_ROUTE_EUNSUPPORTED;
  }

  int callV2(const Family& f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
             int32_t* ids, float* gates, int32_t, moe::fuzz::RouteFault&) const override {
    const moe_route_params_v2 raw =
        moe::fuzz::paramsV2(f, tokens, experts, k, f.bias.empty() ? nullptr : f.bias.data());
    moe::detail::FamilyParams fp;
    if (const int rc = moe::detail::checkParamsV2(&raw, logits, ids, gates, &fp); rc != 0) {
      return rc;
    }
    const int64_t slots = int64_t{tokens} * k;
    if (slots == 0) return MOE_ROUTE_OK;
    if (experts == 0) {
      std::fill(ids, ids + slots, -1);
      std::fill(gates, gates + slots, 0.0f);
      return MOE_ROUTE_OK;
    }
    if (experts > 1024) return MOE_ROUTE_EUNSUPPORTED;
    const FamilyKernelParams p{tokens,    experts,       k,          fp.sigmoid,     fp.bias,
                               fp.groups, fp.topkGroups, fp.top2Sum, fp.renormalize, fp.scale};
    moe::cuda::detail::withLanesFor(
        experts, [&](auto lanes) { launchEmulated<lanes.value>(p, logits, ids, gates); });
    return MOE_ROUTE_OK;
  }
};

Case familyCase(int32_t tokens, int32_t experts, int32_t k, std::vector<float> logits, Family f) {
  Case c = moe::test::routeCase(tokens, experts, k, std::move(logits));
  c.family = std::move(f);
  return c;
}

// Both of the CUDA router's contracts are what the fuzzer reads: an unknown key or a wrong
// type would stop `moe-oracle fuzz --impl libmoe_route_cuda.so` before its first case.
TEST(CudaContracts, BothParseUnderTheFuzzersSchema) {
  const moe::fuzz::Contract v1 = moe::fuzz::parseContract(moe::cuda::detail::kContract);
  const moe::fuzz::Contract v2 = moe::fuzz::parseContract(moe::cuda::detail::kFamilyContract);
  EXPECT_FALSE(v1.v2());
  EXPECT_TRUE(v2.v2());
  EXPECT_TRUE(v2.families.sigmoid && v2.families.softmax && v2.families.groups && v2.families.bias);
}

// The campaign's own generator of family cases (tied groups, cancelling and overturning
// biases, groups of one, k above the eligible experts, invalid parameters), at sizes the
// emulation runs in seconds.
TEST(CudaFamilyKernelEmulated, MatchesTheSpecOnTheCampaignsFamilyCases) {
  const EmulatedCudaFamilyRouter router;
  moe::fuzz::ShapeSpace space;
  space.experts = moe::fuzz::IntSet::range(1, 64);
  space.tokens = moe::fuzz::IntSet::range(1, 3);
  moe::fuzz::SeededSource source(moe::test::testRng()());
  const moe::fuzz::Families all = moe::fuzz::Families::everything();
  for (int i = 0; i < 60; ++i) {
    const Case c = moe::fuzz::drawFamilyCase(source, space, all);
    ASSERT_ROUTE_MATCH(router, c) << "case " << i;
  }
}

// DeepSeek-V3's router (E = 256, k = 8, sigmoid, bias, 8 groups, top 4 by top-2 sum,
// renormalised, scale 2.5) on logits far from any tie: exactly the spec's decision.
TEST(CudaFamilyKernelEmulated, DeepSeekV3ClearOfTiesIsTheSpecsDecisionExactly) {
  const EmulatedCudaFamilyRouter router;
  constexpr int32_t kExperts = 256;
  std::mt19937 rng = moe::test::testRng();
  std::vector<float> logits;
  for (int32_t t = 0; t < 2; ++t) {
    std::vector<float> row(kExperts);
    for (int32_t e = 0; e < kExperts; ++e) row[e] = -4.0f + 0.03125f * static_cast<float>(e);
    std::shuffle(row.begin(), row.end(), rng);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  Family f;
  f.score = ScoreFunction::kSigmoid;
  for (int32_t e = 0; e < kExperts; ++e) f.bias.push_back(0.001f * static_cast<float>(e % 7));
  f.groups = 8;
  f.topkGroups = 4;
  f.groupScore = GroupScoreFunction::kTop2Sum;
  f.renormalize = 1;
  f.scale = 2.5f;
  EXPECT_ROUTE_MATCH_EXACTLY(router, familyCase(2, kExperts, 8, logits, f));
}

// Ties the kernel must break the spec's way: two groups with equal scores (the lower group
// is kept) and, inside the kept group, equal keys (the lower expert first).
TEST(CudaFamilyKernelEmulated, ExactGroupAndExpertTiesGoToTheLowerIndex) {
  const EmulatedCudaFamilyRouter router;
  // E = 8 in 4 groups of 2; groups 1 and 3 tie on max key, group 1 is kept.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 2.0f, 0.5f, 1.5f, 2.0f, -1.0f};
  Family f;
  f.score = ScoreFunction::kSigmoid;
  f.groups = 4;
  f.topkGroups = 1;
  f.groupScore = GroupScoreFunction::kMax;
  f.renormalize = 1;
  EXPECT_ROUTE_MATCH_EXACTLY(router, familyCase(1, 8, 2, logits, f));
}

// Two experts of one lane (3 and 35, E = 64: lane 3 holds both) tie exactly on their keys:
// the lane's own pass, not the butterfly, must keep the lower index first.
TEST(CudaFamilyKernelEmulated, ATieWithinOneLaneGoesToTheLowerIndex) {
  const EmulatedCudaFamilyRouter router;
  std::vector<float> logits(64, -2.0f);
  logits[3] = 1.0f;
  logits[35] = 1.0f;
  Family f;
  f.score = ScoreFunction::kSigmoid;
  EXPECT_ROUTE_MATCH_EXACTLY(router, familyCase(1, 64, 1, logits, f));
}

// A bias that overturns the score order selects, but the gates stay the unbiased scores.
TEST(CudaFamilyKernelEmulated, BiasSelectsButNeverEntersTheGates) {
  const EmulatedCudaFamilyRouter router;
  const std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.0f, -1.0f, -2.0f, -3.0f, -4.0f};
  Family f;
  f.score = ScoreFunction::kSigmoid;
  f.bias = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f};
  f.renormalize = 0;
  f.scale = 1.5f;
  EXPECT_ROUTE_MATCH_EXACTLY(router, familyCase(1, 8, 2, logits, f));
}

}  // namespace
