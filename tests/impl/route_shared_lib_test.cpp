// Each libmoe_route_<name>.so, loaded with dlopen as a user's kernel would be: it
// exports moe_route_v1 and moe_route_v1_contract, nothing of moe's internals, and
// routes bitwise as the in-tree router of the same name.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "moe/route_abi.h"
#include "moe/routers.hpp"
#include "moe/test/seed.hpp"
#include "route_helpers.hpp"
#include "router_params.hpp"

#ifndef MOE_ROUTER_LIB_DIR
#error "MOE_ROUTER_LIB_DIR must name the folder of libmoe_route_<name>.so"
#endif

extern "C" int moe_test_route_from_c(int (*route)(int32_t, int32_t, int32_t, const float*, int32_t*,
                                                  float*));

namespace moe::test {
namespace {

using RouteV1 = decltype(&moe_route_v1);
using ContractV1 = decltype(&moe_route_v1_contract);

class SharedLib : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string path =
        std::string(MOE_ROUTER_LIB_DIR) + "/libmoe_route_" + GetParam() + ".so";
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    route_ = reinterpret_cast<RouteV1>(dlsym(handle_, "moe_route_v1"));
    contract_ = reinterpret_cast<ContractV1>(dlsym(handle_, "moe_route_v1_contract"));
    ASSERT_NE(route_, nullptr);
    ASSERT_NE(contract_, nullptr);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* handle_ = nullptr;
  RouteV1 route_ = nullptr;
  ContractV1 contract_ = nullptr;
};

TEST_P(SharedLib, PublishesTheInTreeContract) {
  EXPECT_EQ(std::string(contract_()), std::string(findRouter(GetParam())->contract_json));
}

TEST_P(SharedLib, RoutesWhenCalledFromC) {
  if (!findRouter(GetParam())->available()) {
    GTEST_SKIP() << GetParam() << ": this CPU lacks the ISA";
  }
  EXPECT_EQ(moe_test_route_from_c(route_), 0);
}

TEST_P(SharedLib, ExportsNothingElse) {
  EXPECT_EQ(dlsym(handle_, "_ZN3moe14builtinRoutersEv"), nullptr);  // moe::builtinRouters()
  EXPECT_EQ(dlsym(handle_, "moe_route_v1_bf16"), nullptr);
}

TEST_P(SharedLib, RoutesAsTheInTreeRouter) {
  const BuiltinRouter& router = *findRouter(GetParam());
  const std::vector<float> x(8, 1.0f);
  int32_t id = 0;
  float gate = 0;
  if (!router.available()) {
    EXPECT_EQ(route_(1, 8, 1, x.data(), &id, &gate), MOE_ROUTE_EUNSUPPORTED);
    GTEST_SKIP() << GetParam() << ": this CPU lacks the ISA (the library says so, no SIGILL)";
  }
  std::mt19937 rng = testRng();
  std::normal_distribution<float> logit(0.0f, 2.0f);
  const int32_t tokens = 3000, experts = 64, k = 8;  // enough for the library's threads
  std::vector<float> logits(size_t(tokens) * experts);
  for (auto& v : logits) v = logit(rng);
  const Routed inTree = routeOrDie(router, tokens, experts, k, logits, 1);
  std::vector<int32_t> ids(size_t(tokens) * k);
  std::vector<float> gates(ids.size());
  ASSERT_EQ(route_(tokens, experts, k, logits.data(), ids.data(), gates.data()), MOE_ROUTE_OK);
  EXPECT_EQ(ids, inTree.ids);
  EXPECT_EQ(std::memcmp(gates.data(), inTree.gates.data(), gates.size() * sizeof(float)), 0);
  EXPECT_EQ(route_(-1, experts, k, logits.data(), ids.data(), gates.data()), MOE_ROUTE_EBADSIZE);
  EXPECT_EQ(route_(1, experts, k, nullptr, ids.data(), gates.data()), MOE_ROUTE_ENULL);
}

INSTANTIATE_TEST_SUITE_P(AllRouters, SharedLib, allBuiltinRouters(), routerTestName);

// The router list exists once, in impl/src/builtin_routers.def, which routers.cpp expands into
// its table and impl/CMakeLists.txt reads to build one library each. An edited list must not
// silently drop (or invent) a library: CMake's reading equals the registry, in order.
TEST(RouterList, CMakeBuildsOneLibraryPerRegistryEntry) {
  std::string registry;
  for (const auto& r : builtinRouters())
    registry += (registry.empty() ? "" : ",") + std::string(r.name);
  EXPECT_EQ(std::string(MOE_CMAKE_ROUTER_NAMES), registry);
}

}  // namespace
}  // namespace moe::test
