// Runs a CUDA kernel source on the CPU, one std::thread per lane of one warp, so the
// routing kernel's logic (layout, reductions, tie-breaking, masks) is tested on machines
// without a GPU. Only what route_kernel.cuh uses is emulated: threadIdx/blockIdx,
// __shfl_xor_sync, __any_sync, __int_as_float, and the CUDA keywords. Each shuffle is two
// barrier waits, so this is slow (milliseconds per token): keep cases small.
// What it cannot check: CUDA's own expf, nvcc code generation, memory behaviour on a device.
#pragma once

#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#define __global__               // NOLINT(bugprone-reserved-identifier): the CUDA keyword, emulated
#define __device__               // NOLINT(bugprone-reserved-identifier): the CUDA keyword, emulated
#define __forceinline__ inline   // NOLINT(bugprone-reserved-identifier): the CUDA keyword, emulated
#define __launch_bounds__(n)     // NOLINT(bugprone-reserved-identifier): the CUDA keyword, emulated
#define __restrict__ __restrict  // NOLINT(bugprone-reserved-identifier): the CUDA keyword, emulated

namespace warp_emulation {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

struct Warp {
  std::barrier<> barrier{32};
  float floats[32];
  int ints[32];
  bool bools[32];
};

inline thread_local Warp* current = nullptr;
inline thread_local int lane = 0;

}  // namespace warp_emulation

inline thread_local warp_emulation::Dim3 threadIdx, blockIdx;

// NOLINTNEXTLINE(bugprone-reserved-identifier): the CUDA intrinsic, emulated
inline float __shfl_xor_sync(unsigned, float value, int offset) {
  using namespace warp_emulation;
  current->floats[lane] = value;
  current->barrier.arrive_and_wait();
  const float result = current->floats[lane ^ offset];
  current->barrier.arrive_and_wait();
  return result;
}

// NOLINTNEXTLINE(bugprone-reserved-identifier): the CUDA intrinsic, emulated
inline int __shfl_xor_sync(unsigned, int value, int offset) {
  using namespace warp_emulation;
  current->ints[lane] = value;
  current->barrier.arrive_and_wait();
  const int result = current->ints[lane ^ offset];
  current->barrier.arrive_and_wait();
  return result;
}

// NOLINTNEXTLINE(bugprone-reserved-identifier): the CUDA intrinsic, emulated
inline bool __any_sync(unsigned, bool predicate) {
  using namespace warp_emulation;
  current->bools[lane] = predicate;
  current->barrier.arrive_and_wait();
  bool any = false;
  for (bool b : current->bools) any = any || b;
  current->barrier.arrive_and_wait();
  return any;
}

// NOLINTNEXTLINE(bugprone-reserved-identifier): the CUDA intrinsic, emulated
inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace warp_emulation {

/// Runs `kernel` for every warp of a grid of `blocks` x `threads_per_block`, one warp at a
/// time, its 32 lanes on 32 threads in lockstep at every shuffle.
inline void launch(unsigned blocks, unsigned threads_per_block,
                   const std::function<void()>& kernel) {
  Warp warp;
  std::vector<std::thread> lanes;
  lanes.reserve(32);
  for (int l = 0; l < 32; ++l) {
    lanes.emplace_back([&, l] {
      current = &warp;
      lane = l;
      for (unsigned b = 0; b < blocks; ++b) {
        for (unsigned w = 0; w < threads_per_block / 32; ++w) {
          blockIdx.x = b;
          threadIdx.x = w * 32 + static_cast<unsigned>(l);
          kernel();
          warp.barrier.arrive_and_wait();  // the next warp starts together
        }
      }
    });
  }
  for (std::thread& t : lanes) t.join();
}

}  // namespace warp_emulation
