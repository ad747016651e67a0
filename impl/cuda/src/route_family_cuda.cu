// Host side of the CUDA router's moe_route_v2 (route_abi.h): the parameters checked by the
// CPU routers' own checkParamsV2 (one rule for every built-in router), host buffers copied
// to the device and back, the family kernel (route_family_kernel.cuh) launched.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "device_buffer.cuh"
#include "moe/cuda/route_cuda.hpp"
#include "moe/detail/route_kernels.hpp"
#include "moe/route_abi.h"
#include "route_contracts.hpp"
#include "route_family_kernel.cuh"

namespace moe::cuda {
namespace {

using detail::DeviceBuffer;
using detail::FamilyKernelParams;
using detail::routeFamilyKernel;

// The kernel specialised for the row's width (withLanesFor).
cudaError_t launchFamily(const FamilyKernelParams& p, const float* logits, std::int32_t* ids,
                         float* gates) {
  using detail::kWarpsPerBlock;
  const unsigned blocks = static_cast<unsigned>(
      (static_cast<std::int64_t>(p.tokens) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const dim3 grid(blocks), block(detail::kWarp * kWarpsPerBlock);
  detail::withLanesFor(p.experts, [&](auto lanes) {
    routeFamilyKernel<lanes.value><<<grid, block>>>(p, logits, ids, gates);
  });
  return cudaGetLastError();
}

}  // namespace
}  // namespace moe::cuda

extern "C" {

// The ABI: host pointers. Statuses as route_abi.h; MOE_ROUTE_EUNSUPPORTED when there is no
// usable GPU or experts > 1024, MOE_ROUTE_EINTERNAL on a CUDA error; nothing is written in
// either case.
__attribute__((visibility("default"))) int moe_route_v2(const moe_route_params_v2* p,
                                                        const float* logits, int32_t* ids,
                                                        float* gates) {
  using namespace moe::cuda;
  moe::detail::FamilyParams fp;
  if (const int rc = moe::detail::checkParamsV2(p, logits, ids, gates, &fp); rc != 0) return rc;
  const std::size_t slotCount = static_cast<std::size_t>(p->tokens) * fp.k;
  if (const auto answer = detail::answerOnHost(slotCount, fp.experts, ids, gates)) return *answer;

  const std::size_t logitCount = static_cast<std::size_t>(p->tokens) * fp.experts;
  DeviceBuffer deviceLogits(logitCount * sizeof(float));
  DeviceBuffer deviceBias(fp.bias != nullptr ? fp.experts * sizeof(float) : 0);
  DeviceBuffer deviceIds(slotCount * sizeof(int32_t)), deviceGates(slotCount * sizeof(float));
  if (!deviceLogits.ok() || !deviceBias.ok() || !deviceIds.ok() || !deviceGates.ok()) {
    return MOE_ROUTE_EINTERNAL;
  }
  const FamilyKernelParams kp{
      p->tokens, fp.experts,    fp.k,       fp.sigmoid,     deviceBias.as<float>(),
      fp.groups, fp.topkGroups, fp.top2Sum, fp.renormalize, fp.scale};
  if (cudaMemcpy(deviceLogits.as<float>(), logits, logitCount * sizeof(float),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      (fp.bias != nullptr && cudaMemcpy(deviceBias.as<float>(), fp.bias, fp.experts * sizeof(float),
                                        cudaMemcpyHostToDevice) != cudaSuccess) ||
      launchFamily(kp, deviceLogits.as<float>(), deviceIds.as<int32_t>(),
                   deviceGates.as<float>()) != cudaSuccess) {
    return MOE_ROUTE_EINTERNAL;
  }
  if (!detail::copyResultsOut(deviceIds, deviceGates, slotCount, ids, gates))
    return MOE_ROUTE_EINTERNAL;
  return MOE_ROUTE_OK;
}

__attribute__((visibility("default"))) const char* moe_route_v2_contract(void) {
  return moe::cuda::detail::kFamilyContract;
}

}  // extern "C"
