// Host side of the CUDA router: the moe_route_v1 ABI (host pointers in, host pointers out),
// the contract, and the C++ helpers of moe/cuda/route_cuda.hpp.
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/cuda/route_cuda.hpp"
#include "moe/route_abi.h"
#include "route_kernel.cuh"

namespace moe::cuda {
namespace {

// gate_budget: g = p_i / S with p = e / sum. The error of fl(x - m) is the same as in the
// binary32 spec (same max, same subtraction), so it is inside spec32_factor 2. What is
// ours alone, relative to g: CUDA's expf (2 ulp) on e_i and on every kept term of S,
// rounding of each p (1/2 ulp), the rank-order sum of kk positive terms ((kk - 1)/2 ulp),
// the last division (1/2 ulp): about 6 + kk/2 ulp of the value, twice that in ulp of the
// exact gate, plus the spec's own (kk + 3)/2: under 64 ulp for min(k, E) <= 32. Larger kk
// widens it by about 1.5 ulp per slot; unverified on a GPU until the fuzzer runs there.
constexpr char kContract[] =
    "{\"abi\": \"moe_route_v1\", \"name\": \"cuda-probs\", \"selects_on\": \"probabilities\", "
    "\"slot_order\": \"rank\", \"batch_invariant\": true, \"compute\": \"binary32\", "
    "\"exp_max_ulp\": 2, \"gate_budget\": {\"spec32_factor\": 2, \"ulp\": 64}, "
    "\"max_experts\": 1024, "
    "\"nonfinite_rows\": \"A row with a NaN logit, a +inf logit, or only -inf logits has "
    "all-NaN probabilities, so every expert ties and the lower indices win: ids "
    "0..min(k,E)-1, gates NaN (slots past min(k,E): -1 and 0). -inf logits in a row with a "
    "finite maximum are masked experts (probability 0).\"}";

// Owns one device allocation; frees it on every path out.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
    ok_ = bytes == 0 || ptr_ != nullptr;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  bool ok() const { return ok_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  bool ok_ = false;
};

bool deviceUsable() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  return count > 0;
}

// Launches the kernel specialised for the smallest V with 32 * V >= experts.
cudaError_t launchRoute(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                        const float* logits, std::int32_t* ids, float* gates, cudaStream_t stream) {
  using detail::kWarpsPerBlock;
  using detail::routeProbsKernel;
  const unsigned blocks = static_cast<unsigned>(
      (static_cast<std::int64_t>(tokens) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const dim3 grid(blocks), block(detail::kWarp * kWarpsPerBlock);
  if (experts <= 32) {
    routeProbsKernel<1><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  } else if (experts <= 64) {
    routeProbsKernel<2><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  } else if (experts <= 128) {
    routeProbsKernel<4><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  } else if (experts <= 256) {
    routeProbsKernel<8><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  } else if (experts <= 512) {
    routeProbsKernel<16><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  } else {
    routeProbsKernel<32><<<grid, block, 0, stream>>>(tokens, experts, k, logits, ids, gates);
  }
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
  if (slot_count == 0) return MOE_ROUTE_OK;
  if (experts == 0) {  // every slot empty; no device needed
    for (std::size_t s = 0; s < slot_count; ++s) {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
    return MOE_ROUTE_OK;
  }
  if (experts > kMaxExperts || !deviceUsable()) return MOE_ROUTE_EUNSUPPORTED;

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
  // Copied into staging first, so a failed copy leaves the caller's buffers untouched.
  std::vector<int32_t> host_ids(slot_count);
  std::vector<float> host_gates(slot_count);
  if (cudaMemcpy(host_ids.data(), device_ids.as<int32_t>(), slot_count * sizeof(int32_t),
                 cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(host_gates.data(), device_gates.as<float>(), slot_count * sizeof(float),
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    return MOE_ROUTE_EINTERNAL;
  }
  std::memcpy(ids, host_ids.data(), slot_count * sizeof(int32_t));
  std::memcpy(gates, host_gates.data(), slot_count * sizeof(float));
  return MOE_ROUTE_OK;
}

__attribute__((visibility("default"))) const char* moe_route_v1_contract(void) {
  return moe::cuda::kContract;
}

}  // extern "C"
