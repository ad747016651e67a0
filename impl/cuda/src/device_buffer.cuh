// What both ABIs' host code shares: an owned device allocation, whether a GPU is there at
// all, the answers that need no device, and the results' way back.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "moe/cuda/route_cuda.hpp"
#include "moe/route_abi.h"

namespace moe::cuda::detail {

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

inline bool deviceUsable() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  return count > 0;
}

// What a call whose arguments passed is answered without the device, as both ABIs answer
// it: no slots (OK), no experts (every slot empty: -1 and 0), more experts than the kernel
// takes or no usable GPU (EUNSUPPORTED, nothing written); nullopt: the device's work.
inline std::optional<int> answerOnHost(std::size_t slots, std::int32_t experts, std::int32_t* ids,
                                       float* gates) {
  if (slots == 0) return MOE_ROUTE_OK;
  if (experts == 0) {
    for (std::size_t s = 0; s < slots; ++s) {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
    return MOE_ROUTE_OK;
  }
  if (experts > kMaxExperts || !deviceUsable()) return MOE_ROUTE_EUNSUPPORTED;
  return std::nullopt;
}

// The kernel's ids and gates (`slots` of each) into the caller's buffers, through host
// staging so that a failed copy leaves them untouched. False on a CUDA error.
inline bool copyResultsOut(const DeviceBuffer& deviceIds, const DeviceBuffer& deviceGates,
                           std::size_t slots, std::int32_t* ids, float* gates) {
  std::vector<std::int32_t> hostIds(slots);
  std::vector<float> hostGates(slots);
  if (cudaMemcpy(hostIds.data(), deviceIds.as<std::int32_t>(), slots * sizeof(std::int32_t),
                 cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(hostGates.data(), deviceGates.as<float>(), slots * sizeof(float),
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    return false;
  }
  std::memcpy(ids, hostIds.data(), slots * sizeof(std::int32_t));
  std::memcpy(gates, hostGates.data(), slots * sizeof(float));
  return true;
}

}  // namespace moe::cuda::detail
