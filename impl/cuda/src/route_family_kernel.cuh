// The routing family (moe_route_v2, route_abi.h) on the GPU, one warp per token, in the
// layout of route_kernel.cuh: lane l holds experts l, l + 32, l + 64, ... (V per lane, a
// power of two, so E <= 1024). Per token:
//   1. scores s: the softmax of the row (max, expf(x - m), butterfly sum, IEEE division, as
//      routeProbsKernel) or each logit's sigmoid, 1 / (1 + expf(-x));
//   2. keys c = s + bias (c = s without a bias);
//   3. with groups: each group's score (max of its keys, or its two best keys added best
//      first) by a warp reduction per group, held like the experts (lane g % 32, register
//      g / 32); then topk_groups rounds of a warp argmax over the group scores (exact ties
//      to the lower group), each round marking the experts of the winner eligible;
//   4. min(k, eligible) rounds of a warp argmax over the eligible keys (exact ties to the
//      lower index), carrying the winner's unbiased score;
//   5. gates: the kept scores, divided by their sum (added in rank order) when
//      renormalising, then times the scale.
// A row whose spec values are not numbers (a NaN logit; with softmax also a +inf logit or
// only -inf logits; a NaN key or group score, which only a non-finite bias makes) gets ids
// 0..n-1 and NaN gates, as the binary32 spec router and the CPU routers give it.
// Every step reads only the token's own row: batch invariant bit for bit.
#pragma once

#include <cstdint>

#include "route_kernel.cuh"

namespace moe::cuda::detail {

// moe_route_params_v2 once checked (checkParamsV2), with the bias on the device.
struct FamilyKernelParams {
  std::int32_t tokens, experts, k;
  bool sigmoid;
  const float* bias;  // device pointer, experts entries, or nullptr
  std::int32_t groups, topkGroups;
  bool top2Sum;
  bool renormalize;
  float scale;
};

// The best two values of a set (b1 >= b2), merged by value: which expert holds them does
// not matter to a group's score, and max/min are exact, so every lane ends with the same
// bits whatever order the butterfly merges in.
struct TopTwo {
  float b1, b2;
};

__device__ __forceinline__ TopTwo mergeTopTwo(TopTwo a, TopTwo o) {
  return {fmaxf(a.b1, o.b1), fmaxf(fminf(a.b1, o.b1), fmaxf(a.b2, o.b2))};
}

// Group g's score: every lane gets the same value. Keys are never NaN here.
template <int V>
__device__ float groupScore(const float (&c)[V], int lane, std::int32_t experts,
                            std::int32_t groupSize, std::int32_t g, bool top2Sum) {
  TopTwo t{-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int index = lane + kWarp * j;
    if (index < experts && index / groupSize == g) t = mergeTopTwo(t, TopTwo{c[j], -INFINITY});
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const TopTwo o{__shfl_xor_sync(kFullMask, t.b1, offset),
                   __shfl_xor_sync(kFullMask, t.b2, offset)};
    t = mergeTopTwo(t, o);
  }
  return top2Sum ? t.b1 + t.b2 : t.b1;
}

template <int V>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    routeFamilyKernel(FamilyKernelParams p, const float* __restrict__ logits,
                      std::int32_t* __restrict__ ids, float* __restrict__ gates) {
  const std::int64_t token =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (token >= p.tokens) return;  // uniform across the warp: one warp, one token
  const std::int32_t experts = p.experts;
  const float* row = logits + token * experts;
  std::int32_t* outIds = ids + token * p.k;
  float* outGates = gates + token * p.k;
  const std::int32_t groupSize = experts / p.groups;
  const std::int32_t eligibleCount = p.groups == 1 ? experts : p.topkGroups * groupSize;
  const std::int32_t keptCount = p.k < eligibleCount ? p.k : eligibleCount;

  float s[V], c[V];
  unsigned present = 0;  // bit j: register j holds an expert
  bool nonfinite = false;
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int index = lane + kWarp * j;
    s[j] = -INFINITY;
    if (index < experts) {
      s[j] = row[index];
      present |= 1u << j;
      nonfinite |= (s[j] != s[j]) || (!p.sigmoid && s[j] == INFINITY);
      m = fmaxf(m, s[j]);
    }
  }
  if (!p.sigmoid) {
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
    }
  }
  nonfinite = __any_sync(kFullMask, nonfinite) || (!p.sigmoid && m == -INFINITY);

  if (!nonfinite) {
    if (p.sigmoid) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (present & (1u << j)) s[j] = 1.0f / (1.0f + expf(-s[j]));
      }
    } else {
      warpSoftmax(s, present, m);
    }
    bool nanKey = false;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      c[j] = s[j];
      if ((present & (1u << j)) && p.bias != nullptr) c[j] = s[j] + p.bias[lane + kWarp * j];
      nanKey |= (present & (1u << j)) && c[j] != c[j];
    }
    nonfinite = __any_sync(kFullMask, nanKey);
  }

  // Eligibility: every expert without groups, else those of the kept groups.
  unsigned eligible = present;
  if (!nonfinite && p.groups > 1) {
    float score[V];
    unsigned groupOpen = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      score[j] = -INFINITY;
    }
    bool nanGroup = false;
    for (std::int32_t g = 0; g < p.groups; ++g) {
      const float gs = groupScore(c, lane, experts, groupSize, g, p.top2Sum);
      nanGroup |= gs != gs;
      if (lane == (g & (kWarp - 1))) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          if (j == g / kWarp) {
            score[j] = gs;
            groupOpen |= 1u << j;
          }
        }
      }
    }
    nonfinite = nanGroup;  // the same on every lane: each lane saw every group's score
    eligible = 0;
    for (std::int32_t round = 0; !nonfinite && round < p.topkGroups; ++round) {
      float best, carry;
      int winner;
      warpArgmax<V, false>(score, score, groupOpen, lane, best, winner, carry);
      if (lane == (winner & (kWarp - 1))) groupOpen &= ~(1u << (winner / kWarp));
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int index = lane + kWarp * j;
        if ((present & (1u << j)) && index / groupSize == winner) eligible |= 1u << j;
      }
    }
  }

  if (nonfinite) {
    for (std::int64_t slot = lane; slot < p.k; slot += kWarp) {  // 64-bit: k may be near 2^31
      outIds[slot] = slot < keptCount ? static_cast<std::int32_t>(slot) : -1;
      outGates[slot] = slot < keptCount ? __int_as_float(0x7fc00000) : 0.0f;
    }
    return;
  }

  float keptSum = 0.0f;
  for (int slot = 0; slot < keptCount; ++slot) {
    float best, score;
    int winner;
    warpArgmax<V, true>(c, s, eligible, lane, best, winner, score);
    if (lane == (winner & (kWarp - 1))) eligible &= ~(1u << (winner / kWarp));
    keptSum += score;
    if (lane == (slot & (kWarp - 1))) {
      outIds[slot] = winner;
      outGates[slot] = score;  // the unbiased score for now; finished below by the same lane
    }
  }
  for (std::int64_t slot = lane; slot < p.k; slot += kWarp) {  // 64-bit: k may be near 2^31
    if (slot < keptCount) {
      const float w = p.renormalize ? outGates[slot] / keptSum : outGates[slot];
      outGates[slot] = w * p.scale;
    } else {
      outIds[slot] = -1;
      outGates[slot] = 0.0f;
    }
  }
}

}  // namespace moe::cuda::detail
