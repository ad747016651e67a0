// The CUDA routing kernel's source, compiled by the host compiler and run with each warp's
// 32 lanes emulated by threads (warp_emulation.hpp): the kernel cases of route_cases.hpp run
// on every machine, GPU or not. It checks the kernel's logic; the GPU suite
// (cuda_route_test.cpp) checks the real thing.
#include "warp_emulation.hpp"
// The kernel must come after the emulation, which defines the CUDA keywords it uses.
#include "route_cases.hpp"
#include "route_kernel.cuh"

namespace {

using route_cases::KernelCases;
using route_cases::Routed;

template <int V>
void launchEmulated(std::int32_t tokens, std::int32_t experts, std::int32_t k, const float* logits,
                    std::int32_t* ids, float* gates) {
  using moe::cuda::detail::kWarp;
  using moe::cuda::detail::kWarpsPerBlock;
  const unsigned blocks = static_cast<unsigned>((tokens + kWarpsPerBlock - 1) / kWarpsPerBlock);
  warp_emulation::launch(blocks, kWarp * kWarpsPerBlock, [&] {
    moe::cuda::detail::routeProbsKernel<V>(tokens, experts, k, logits, ids, gates);
  });
}

// As launchRoute in route_cuda.cu picks the kernel (withLanesFor).
Routed routeEmulated(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                     const std::vector<float>& logits) {
  Routed out{std::vector<std::int32_t>(static_cast<std::size_t>(tokens) * k, -7),
             std::vector<float>(static_cast<std::size_t>(tokens) * k, -7.0f)};
  const float* l = logits.data();
  std::int32_t* ids = out.ids.data();
  float* g = out.gates.data();
  moe::cuda::detail::withLanesFor(
      experts, [&](auto lanes) { launchEmulated<lanes.value>(tokens, experts, k, l, ids, g); });
  return out;
}

std::string alwaysAvailable() {
  return {};
}

// Two tokens per sweep case: the first and the second warp of a block (a grid of one block
// with two idle warps), which is what the layout code paths depend on.
INSTANTIATE_TEST_SUITE_P(Emulated, KernelCases,
                         ::testing::Values(route_cases::Backend{"emulated", &routeEmulated,
                                                                &alwaysAvailable, 2, false}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
