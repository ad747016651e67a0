// The CUDA router through its ABI (libmoe_route_cuda.so): the kernel cases of
// route_cases.hpp on the GPU (skipped without one), plus argument validation and the
// contract, which need no GPU and always run.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "moe/cuda/route_cuda.hpp"
#include "moe/route_abi.h"
#include "route_cases.hpp"

namespace {

using route_cases::KernelCases;

route_cases::Routed routeOnGpu(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                               const std::vector<float>& logits) {
  route_cases::Routed out{std::vector<std::int32_t>(static_cast<std::size_t>(tokens) * k, -7),
                          std::vector<float>(static_cast<std::size_t>(tokens) * k, -7.0f)};
  const int status =
      moe_route_v1(tokens, experts, k, logits.data(), out.ids.data(), out.gates.data());
  EXPECT_EQ(status, MOE_ROUTE_OK);
  if (status != MOE_ROUTE_OK) return {};
  return out;
}

TEST(CudaContract, IsJsonWithTheAbiFields) {
  const nlohmann::json contract = nlohmann::json::parse(moe_route_v1_contract());
  EXPECT_EQ(contract.at("abi"), "moe_route_v1");
  EXPECT_EQ(contract.at("name"), "cuda-probs");
  EXPECT_EQ(contract.at("selects_on"), "probabilities");
  EXPECT_EQ(contract.at("slot_order"), "rank");
  EXPECT_EQ(contract.at("batch_invariant"), true);
  EXPECT_EQ(contract.at("compute"), "binary32");
  EXPECT_TRUE(contract.at("exp_max_ulp").is_number());
  EXPECT_TRUE(contract.at("gate_budget").at("spec32_factor").is_number());
  EXPECT_TRUE(contract.at("gate_budget").at("ulp").is_number());
  EXPECT_TRUE(contract.at("nonfinite_rows").is_string());
}

// Loaded the way a user's program or the fuzzer loads a router: by path, with dlopen.
// $MOE_CUDA_ROUTER_LIB overrides the build's path (scripts/gpu-check runs these tests from a
// copied folder on a GPU machine).
TEST(CudaSharedLibrary, LoadsWithDlopenAndExportsTheAbi) {
  const char* override = std::getenv("MOE_CUDA_ROUTER_LIB");
  void* handle =
      dlopen(override != nullptr ? override : MOE_CUDA_ROUTER_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using RouteV1 =
      int (*)(std::int32_t, std::int32_t, std::int32_t, const float*, std::int32_t*, float*);
  using ContractV1 = const char* (*)();
  const auto route = reinterpret_cast<RouteV1>(dlsym(handle, "moe_route_v1"));
  const auto contract = reinterpret_cast<ContractV1>(dlsym(handle, "moe_route_v1_contract"));
  ASSERT_NE(route, nullptr);
  ASSERT_NE(contract, nullptr);
  EXPECT_EQ(nlohmann::json::parse(contract()).at("name"), "cuda-probs");
  EXPECT_EQ(route(-1, 1, 1, nullptr, nullptr, nullptr), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(dlsym(handle, "cudaMalloc"), nullptr);  // the static cudart stays private
  dlclose(handle);
}

TEST(CudaArguments, RejectedBeforeAnyDeviceWorkAndEmptyShapesNeedNoDevice) {
  float logits[4] = {0, 1, 2, 3};
  std::int32_t ids[4] = {9, 9, 9, 9};
  float gates[4] = {9, 9, 9, 9};
  EXPECT_EQ(moe_route_v1(-1, 2, 1, logits, ids, gates), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(moe_route_v1(1, -2, 1, logits, ids, gates), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(moe_route_v1(1, 2, -1, logits, ids, gates), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(moe_route_v1(1, 2, 1, nullptr, ids, gates), MOE_ROUTE_ENULL);
  EXPECT_EQ(moe_route_v1(1, 2, 1, logits, nullptr, gates), MOE_ROUTE_ENULL);
  EXPECT_EQ(moe_route_v1(1, 2, 1, logits, ids, nullptr), MOE_ROUTE_ENULL);
  EXPECT_EQ(ids[0], 9);  // a rejected call writes nothing
  EXPECT_EQ(moe_route_v1(0, 4, 2, nullptr, nullptr, nullptr), MOE_ROUTE_OK);
  EXPECT_EQ(moe_route_v1(2, 2, 0, logits, nullptr, nullptr), MOE_ROUTE_OK);
  // E = 0 with k > 0: every slot empty, answered on the host.
  EXPECT_EQ(moe_route_v1(2, 0, 2, nullptr, ids, gates), MOE_ROUTE_OK);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(ids[s], -1);
    EXPECT_EQ(gates[s], 0.0f);
  }
  std::vector<float> wide(1025, 0.0f);
  std::vector<std::int32_t> wide_ids(1);
  std::vector<float> wide_gates(1);
  EXPECT_EQ(moe_route_v1(1, 1025, 1, wide.data(), wide_ids.data(), wide_gates.data()),
            MOE_ROUTE_EUNSUPPORTED);
}

TEST(CudaArguments, WithoutAGpuTheRouterSaysUnsupportedAndWritesNothing) {
  if (moe::cuda::unavailableReason().empty()) GTEST_SKIP() << "a GPU is present";
  float logits[2] = {0, 1};
  std::int32_t ids[1] = {9};
  float gates[1] = {9};
  EXPECT_EQ(moe_route_v1(1, 2, 1, logits, ids, gates), MOE_ROUTE_EUNSUPPORTED);
  EXPECT_EQ(ids[0], 9);
  EXPECT_THROW(moe::cuda::kernelMicrosPerCall(1, 8, 2, 1), std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(Gpu, KernelCases,
                         ::testing::Values(route_cases::Backend{
                             "gpu", &routeOnGpu, &moe::cuda::unavailableReason, 37, true}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
