// Fused softmax + top-k routing on probabilities (Mixtral's rule), one warp per token.
//
// Layout: lane l of the warp holds experts l, l + 32, l + 64, ... in registers (coalesced
// loads), V = ceil(E / 32) rounded up to a power of two, so E <= 1024.
// Per token:
//   1. m = max of the logits (warp reduction); a NaN or +inf logit, or m = -inf, makes the
//      row non-finite: ids 0..kk-1 and NaN gates, as the binary32 spec gives (all
//      probabilities NaN, every expert ties, lower index wins) and as the CPU routers do.
//   2. e_i = expf(x_i - m), sum by a butterfly reduction (every lane gets the same bits),
//      p_i = e_i / sum (IEEE division).
//   3. kk = min(k, E) rounds of a warp argmax over (p, index): higher p wins, an exact tie
//      goes to the lower index. -0 == +0 falls out of IEEE comparison (and p >= +0 anyway).
//      -inf logits give p = 0 and are kept only after every positive one, in index order.
//   4. gates = p / (sum of the kept p, added in rank order).
// No step depends on other tokens, so results are batch invariant bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

namespace moe::cuda::detail {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFullMask = 0xffffffffu;

// (value, index) a beats (value, index) b: greater value, or an exact tie and lower index.
__device__ __forceinline__ bool beats(float av, int ai, float bv, int bi) {
  return av > bv || (av == bv && ai < bi);
}

// Calls f(std::integral_constant<int, V>{}) for the smallest V of 1, 2, 4, ..., 32 with
// 32 * V >= experts (E <= 1024): how every launch, real or emulated, picks its kernel.
template <class F>
void withLanesFor(std::int32_t experts, F&& f) {
  if (experts <= 32) {
    f(std::integral_constant<int, 1>{});
  } else if (experts <= 64) {
    f(std::integral_constant<int, 2>{});
  } else if (experts <= 128) {
    f(std::integral_constant<int, 4>{});
  } else if (experts <= 256) {
    f(std::integral_constant<int, 8>{});
  } else if (experts <= 512) {
    f(std::integral_constant<int, 16>{});
  } else {
    f(std::integral_constant<int, 32>{});
  }
}

// The row's probabilities in place: v[j] = expf(v[j] - m) / sum for the registers of
// `present` (bit j: register j holds an expert), the sum by a butterfly so that every lane
// has the same bits, IEEE division. The others are divided too and must be ignored.
template <int V>
__device__ __forceinline__ void warpSoftmax(float (&v)[V], unsigned present, float m) {
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if (present & (1u << j)) {
      v[j] = expf(v[j] - m);
      sum += v[j];
    }
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(kFullMask, sum, offset);
  }
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = v[j] / sum;
}

// One round of a warp argmax over the candidates of `open` (bit j: register j is one):
// this lane's best first (indices grow with j, so a strict > keeps the lower index on
// ties), then the butterfly under beats. A lane with no candidate offers index 0x7fffffff,
// which loses to any real index of the same value. With kCarry, carry[j] travels with the
// winner into bestCarry (one more shuffle a step).
template <int V, bool kCarry>
__device__ __forceinline__ void warpArgmax(const float (&key)[V], const float (&carry)[V],
                                           unsigned open, int lane, float& best, int& bestIndex,
                                           float& bestCarry) {
  best = -INFINITY;
  bestIndex = 0x7fffffff;
  bestCarry = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if ((open & (1u << j)) && (bestIndex == 0x7fffffff || key[j] > best)) {
      best = key[j];
      bestIndex = lane + kWarp * j;
      if (kCarry) bestCarry = carry[j];
    }
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(kFullMask, best, offset);
    const int otherIndex = __shfl_xor_sync(kFullMask, bestIndex, offset);
    const float otherCarry = kCarry ? __shfl_xor_sync(kFullMask, bestCarry, offset) : 0.0f;
    if (beats(other, otherIndex, best, bestIndex)) {
      best = other;
      bestIndex = otherIndex;
      bestCarry = otherCarry;
    }
  }
}

template <int V>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    routeProbsKernel(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                     const float* __restrict__ logits, std::int32_t* __restrict__ ids,
                     float* __restrict__ gates) {
  const std::int64_t token =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (token >= tokens) return;  // uniform across the warp: one warp, one token
  const float* row = logits + token * experts;
  std::int32_t* out_ids = ids + token * k;
  float* out_gates = gates + token * k;
  const int kept_count = k < experts ? k : experts;

  float v[V];
  unsigned unavailable = 0;  // bit j: slot j of this lane holds no expert, or was taken
  bool nonfinite = false;
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int index = lane + kWarp * j;
    if (index < experts) {
      v[j] = row[index];
      nonfinite |= (v[j] != v[j]) || v[j] == INFINITY;
      m = fmaxf(m, v[j]);
    } else {
      v[j] = -INFINITY;
      unavailable |= 1u << j;
    }
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
  }
  nonfinite = __any_sync(kFullMask, nonfinite) || m == -INFINITY;
  if (nonfinite) {
    for (std::int64_t s = lane; s < k; s += kWarp) {  // 64-bit: k may be near 2^31
      out_ids[s] = s < kept_count ? static_cast<std::int32_t>(s) : -1;
      out_gates[s] = s < kept_count ? __int_as_float(0x7fc00000) : 0.0f;
    }
    return;
  }

  warpSoftmax(v, ~unavailable, m);

  float kept_sum = 0.0f;
  for (int s = 0; s < kept_count; ++s) {
    // This lane's best untaken expert, then the warp's (every p >= 0, no index carried).
    float best, unused;
    int best_index;
    warpArgmax<V, false>(v, v, ~unavailable, lane, best, best_index, unused);
    // Every lane now holds the same winner (a strict total order has one maximum).
    if (lane == (best_index & (kWarp - 1))) unavailable |= 1u << (best_index / kWarp);
    kept_sum += best;
    if (lane == (s & (kWarp - 1))) {
      out_ids[s] = best_index;
      out_gates[s] = best;  // the probability for now; divided below by the same lane
    }
  }
  for (std::int64_t s = lane; s < k; s += kWarp) {  // 64-bit: k may be near 2^31
    if (s < kept_count) {
      out_gates[s] = out_gates[s] / kept_sum;
    } else {
      out_ids[s] = -1;
      out_gates[s] = 0.0f;
    }
  }
}

}  // namespace moe::cuda::detail
