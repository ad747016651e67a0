// Host side of the CUDA router: the moe_route_v1 ABI (host pointers in, host pointers out),
// the contract, and the C++ helpers of moe/cuda/route_cuda.hpp.
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_buffer.cuh"
#include "moe/cuda/route_cuda.hpp"
#include "moe/route_abi.h"
#include "route_contracts.hpp"
#include "route_kernel.cuh"

namespace moe::cuda {
namespace {

using detail::DeviceBuffer;

// Launches the kernel specialised for the smallest V with 32 * V >= experts.
cudaError_t launchRoute(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                        const float* logits, std::int32_t* ids, float* gates, cudaStream_t stream) {
  using detail::kWarpsPerBlock;
  using detail::routeProbsKernel;
  const unsigned blocks = static_cast<unsigned>(
      (static_cast<std::int64_t>(tokens) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const dim3 grid(blocks), block(detail::kWarp * kWarpsPerBlock);
  detail::withLanesFor(experts, [&](auto lanes) {
    routeProbsKernel<lanes.value>
        <<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  });
  return cudaGetLastError();
}

// The ABI's argument rules (route_abi.h), shared by moe_route_v1 and the timing helper.
int checkArguments(std::int32_t tokens, std::int32_t experts, std::int32_t k, const float* logits,
                   const std::int32_t* ids, const float* gates) {
  if (tokens < 0 || experts < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
  const std::int64_t logit_count = static_cast<std::int64_t>(tokens) * experts;
  const std::int64_t slot_count = static_cast<std::int64_t>(tokens) * k;
  constexpr std::int64_t kMaxFloats = std::numeric_limits<std::ptrdiff_t>::max() / 4;
  if (logit_count > 0 && logits == nullptr) return MOE_ROUTE_ENULL;
  if (slot_count > 0 && (ids == nullptr || gates == nullptr)) return MOE_ROUTE_ENULL;
  if (logit_count > kMaxFloats || slot_count > kMaxFloats) return MOE_ROUTE_EOVERFLOW;
  return MOE_ROUTE_OK;
}

}  // namespace

std::string unavailableReason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
  }
  if (count == 0) return "no CUDA device present";
  return {};
}

double kernelMicrosPerCall(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                           std::int32_t iterations) {
  if (tokens <= 0 || experts <= 0 || experts > kMaxExperts || k < 0 || iterations <= 0) {
    throw std::invalid_argument(
        "moe::cuda::kernelMicrosPerCall: need tokens > 0, 0 < experts "
        "<= 1024, k >= 0, iterations > 0");
  }
  const std::string why = unavailableReason();
  if (!why.empty()) throw std::runtime_error("moe::cuda: no usable GPU: " + why);
  const std::size_t logit_count = static_cast<std::size_t>(tokens) * experts;
  const std::size_t slot_count = static_cast<std::size_t>(tokens) * k;
  std::vector<float> host_logits(logit_count);
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& x : host_logits) x = normal(rng);
  DeviceBuffer logits(logit_count * sizeof(float));
  DeviceBuffer ids(slot_count * sizeof(std::int32_t)), gates(slot_count * sizeof(float));
  if (!logits.ok() || !ids.ok() || !gates.ok()) {
    throw std::runtime_error("moe::cuda: cudaMalloc failed");
  }
  auto check = [](cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
      throw std::runtime_error(std::string("moe::cuda: ") + what + ": " +
                               cudaGetErrorString(status));
    }
  };
  check(cudaMemcpy(logits.as<float>(), host_logits.data(), logit_count * sizeof(float),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  check(launchRoute(tokens, experts, k, logits.as<float>(), ids.as<std::int32_t>(),
                    gates.as<float>(), nullptr),
        "warm-up launch");
  check(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  cudaEventRecord(start);
  for (std::int32_t i = 0; i < iterations; ++i) {
    launchRoute(tokens, experts, k, logits.as<float>(), ids.as<std::int32_t>(), gates.as<float>(),
                nullptr);
  }
  cudaEventRecord(stop);
  const cudaError_t status = cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check(status, "timed launches");
  check(cudaGetLastError(), "timed launches");
  return static_cast<double>(ms) * 1000.0 / iterations;
}

}  // namespace moe::cuda

extern "C" {

// The ABI: host pointers. Returns MOE_ROUTE_EUNSUPPORTED when there is no usable GPU or
// experts > 1024, MOE_ROUTE_EINTERNAL on a CUDA error; nothing is written in either case.
__attribute__((visibility("default"))) int moe_route_v1(int32_t tokens, int32_t experts, int32_t k,
                                                        const float* logits, int32_t* ids,
                                                        float* gates) {
  using namespace moe::cuda;
  const int argument_status = checkArguments(tokens, experts, k, logits, ids, gates);
  if (argument_status != MOE_ROUTE_OK) return argument_status;
  const std::size_t slot_count = static_cast<std::size_t>(tokens) * k;
  if (const auto answer = detail::answerOnHost(slot_count, experts, ids, gates)) return *answer;

  const std::size_t logit_count = static_cast<std::size_t>(tokens) * experts;
  DeviceBuffer device_logits(logit_count * sizeof(float));
  DeviceBuffer device_ids(slot_count * sizeof(int32_t)), device_gates(slot_count * sizeof(float));
  if (!device_logits.ok() || !device_ids.ok() || !device_gates.ok()) return MOE_ROUTE_EINTERNAL;
  if (cudaMemcpy(device_logits.as<float>(), logits, logit_count * sizeof(float),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      launchRoute(tokens, experts, k, device_logits.as<float>(), device_ids.as<int32_t>(),
                  device_gates.as<float>(), nullptr) != cudaSuccess) {
    return MOE_ROUTE_EINTERNAL;
  }
  if (!detail::copyResultsOut(device_ids, device_gates, slot_count, ids, gates))
    return MOE_ROUTE_EINTERNAL;
  return MOE_ROUTE_OK;
}

__attribute__((visibility("default"))) const char* moe_route_v1_contract(void) {
  return moe::cuda::detail::kContract;
}

}  // extern "C"
