// The CUDA router's C++ side door, exported from libmoe_route_cuda.so next to the C ABI
// (moe_route_v1, moe_route_v1_contract in moe/route_abi.h). Plain C++: callers need no
// CUDA headers or compiler, only the shared library.
#pragma once

#include <cstdint>
#include <string>

namespace moe::cuda {

/// Largest expert count the kernel takes (32 lanes x 32 registers per lane).
inline constexpr std::int32_t kMaxExperts = 1024;

/// Empty when a CUDA device is present and usable; otherwise the reason, e.g. the runtime's
/// "CUDA driver version is insufficient for CUDA runtime version". Any error means no GPU.
__attribute__((visibility("default"))) std::string unavailableReason();

/// Mean time of one kernel launch in microseconds, routing `tokens` rows of random logits
/// already resident on the device (host<->device copies are not timed), over `iterations`
/// launches after one warm-up. Throws std::runtime_error without a usable device or on any
/// CUDA error, std::invalid_argument for sizes the kernel rejects.
__attribute__((visibility("default"))) double kernelMicrosPerCall(std::int32_t tokens,
                                                                  std::int32_t experts,
                                                                  std::int32_t k,
                                                                  std::int32_t iterations);

}  // namespace moe::cuda
