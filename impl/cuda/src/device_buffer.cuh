// What both ABIs' host code needs of the device: an owned allocation, and whether a GPU is
// there at all.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

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
