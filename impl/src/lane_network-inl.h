// Token-parallel top-kk by a sorting network on order keys, for AVX-512 rows of 17..512
// experts and kk = min(k, E) in 1..8, or 257..512 experts and kk in 9..16 (Kimi K2's
// E = 384, k = 8 and Qwen3-Next's E = 512, k = 10). Re-included once per Highway target
// by route_simd.cpp (foreach_target), hence the toggle guard.
//
// Sixteen tokens at a time: each row's keys (order_keys-inl.h: the value's high bits and
// the expert's code, so a key carries its id) are moved in 16 x 16 blocks so that lane t
// of every key vector holds one of token t's keys. From there the selection is
// lane-wise min/max only, with no shuffles. Keeping the 8 best (kk <= 8): a block's 16
// key vectors are sorted in two groups of 8 (Knuth's 19-comparator network), the groups
// merged keeping the 8 best (Batcher's odd-even merge, pruned to the outputs read), and
// the block merged the same way into the best 8 so far. Keeping 16 (kk in 9..16): the
// block is sorted whole (two groups of 8 and a bitonic merge) and merged into the best 16
// so far by one bitonic split and a bitonic clean. Each merge also yields the best key it
// drops, so the best key left out is known.
//
// Keys order as the values wherever the values differ above the code bits (6 up to 64
// experts, 8 up to 256, 9 beyond); where two of the deciding keys share a tie zone (exact
// ties, +0 and -0, values within 2^-17, 2^-15 or 2^-14), or a NaN or +inf is in the row,
// the token goes to the caller's general path. Probabilities mode selects on the same keys (p
// orders as the logits do) and checks, on the kept values' exps, the margins past which the spec's
// rounded p cannot tie (LaneNetworkGroup says why); the sum of every exp cancels from the
// gates and is never formed. A token's lane never mixes with another's, and whether it
// takes the general path depends on its own values only, so the result is bitwise
// independent of its batch and of the thread count.
#if defined(MOE_IMPL_LANE_NETWORK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_LANE_NETWORK_INL_H_
#undef MOE_IMPL_LANE_NETWORK_INL_H_
#else
#define MOE_IMPL_LANE_NETWORK_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "fast_exp-inl.h"
#include "order_keys-inl.h"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if MOE_ORDER_KEYS && MOE_FAST_EXP
#undef MOE_LANE_NETWORK
#define MOE_LANE_NETWORK 1

inline constexpr int32_t kNetworkGroup = 16;  // tokens per group: one per lane
inline constexpr int32_t kNetworkMaxExperts = OrderKeys<9>::kMaxExperts;  // 512

// The kernels' prefetch of the rows they read next (the next group's; for the family's
// per-token screen, the next rows'), one line: into L2 (PREFETCHT1), not L1. On AMD Zen 4 (one
// core, T = 65,536, rows out of DRAM) E = 256, k = 8 went from about 150 to 77 ns a token, E = 384
// from 225 to 117, DeepSeek-V3's moe_route_v2 from 180 to 141; rows in L2 ran as before. Likely
// why: a PREFETCHT0 holds one of L1's few miss buffers for the whole trip to memory, where L2
// overlaps many more misses. On an Intel Xeon (GenuineIntel family 6 model 167) with the rows
// in its L3, PREFETCHT1 won as well (E = 384, k = 8, logits: 6.1-6.3 against 5.6-5.8 M tokens a
// second; DeepSeek-V3 7.5-9.7 against 6.8-6.9), where an earlier commit had measured it slower.
// The line `bytesAhead` past `base`; past the batch it does not fault, and the address is
// formed as an integer (no pointer past the array).
HWY_INLINE void PrefetchRowLine(const void* base, uint64_t bytesAhead) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) + bytesAhead),
               _MM_HINT_T1);
}

// Asks for the line at `at` writable (PREFETCHW), so that a store to it finds it in L1
// rather than waiting, store buffer filling, for its read-for-ownership. Every AVX-512 x86
// core has the instruction (Intel from Broadwell, AMD); its intrinsic needs the prfchw
// target, which the AVX3 target's functions are not compiled for.
HWY_INLINE void PrefetchForWrite(const void* at) {
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(at)));
}

// The order in which rows meet lanes. A group of 16 consecutive rows reads one line of
// each of its 16 rows per block: 16 interleaved streams, several to a page, which the
// hardware prefetchers do not follow, and software prefetches are bounded by the core's
// miss buffers (the Intel Xeon above, rows in L3: about 10 GB/s a core where a plain read
// gets 23). So rows of at least kLaneStepMinExperts experts (1 KiB) are taken a run of
// kLaneRun rows at a time, as kLaneStep groups whose lane t reads row i + t kLaneStep in
// group i: each lane then reads kLaneStep consecutive rows in order, a stream the
// prefetchers follow. On that Xeon (one core, T = 65,536, rows in L3): E = 384, k = 8
// 175 -> 125 ns a token, E = 256, k = 8 90-109 -> 79, E = 512, k = 10 214 -> 202,
// DeepSeek-V3's moe_route_v2 150 -> 121; E <= 128 no faster (E = 64 the same, E = 128 and
// E = 32 a few per cent slower), and a step of 16 gained less than 64 (E = 384: 137).
inline constexpr int32_t kLaneStep = 64;
inline constexpr int64_t kLaneRun = int64_t{kNetworkGroup} * kLaneStep;
inline constexpr int32_t kLaneStepMinExperts = 256;
// The gathers' 32-bit element indices reach lane 15's row and its last expert.
static_assert(int64_t{15} * kLaneStep * kNetworkMaxExperts + kNetworkMaxExperts <= INT32_MAX);

// Calls group(t0, step) for each group of `rows` rows: lane t on row t0 + t * step, step a
// std::integral_constant<int, ...>. With `strided`, whole runs of kLaneRun rows first
// (step kLaneStep, 16 rows each), then 16 consecutive rows at a time (step 1; the last
// group may be short).
template <class Fn>
HWY_INLINE void ForEachLaneGroup(int64_t rows, bool strided, Fn group) {
  int64_t t0 = 0;
  if (strided) {
    for (; t0 + kLaneRun <= rows; t0 += kLaneRun) {
      for (int32_t i = 0; i < kLaneStep; ++i) {
        group(t0 + i, std::integral_constant<int, kLaneStep>());
      }
    }
  }
  for (; t0 < rows; t0 += kNetworkGroup) group(t0, std::integral_constant<int, 1>());
}

// Bytes from a lane's row to the row it reads a group later (ForEachLaneGroup): 16 rows
// on, or in a strided run the next row. The kernels prefetch that far ahead.
template <int kStep>
constexpr uint64_t NextGroupRowBytes(int32_t experts) {
  return sizeof(float) * uint64_t{kStep == 1 ? kNetworkGroup : 1} * uint64_t(experts);
}

// The network keeps the 8 best up to kk = 8, else the 16 best. Keeping 16 takes about
// three times the comparators a block; it runs where the per-token kernels are slowest
// (E > 256, where their threshold passes too many candidates for kk > 8).
inline bool UsesLaneNetwork(int32_t experts, int32_t kk) {
  if (experts <= 16 || experts > kNetworkMaxExperts || kk < 1) return false;
  return kk <= 8 || (kk <= 16 && experts > 256);
}

// The real lanes of a row's block b: experts 16 b + lane < E.
HWY_INLINE __mmask16 RealLanes(int32_t experts, int b) {
  const int32_t n = std::clamp(experts - 16 * b, 0, 16);
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// Writes a row's first kk (<= 16) ids and gates and empties the rest; lanes from kk on
// are not read.
HWY_INLINE void StoreKept(int32_t k, int32_t kk, __m512i keptIds, __m512 keptGates, int32_t* ids,
                          float* gates) {
  const auto first = static_cast<__mmask16>((1u << kk) - 1u);
  _mm512_mask_storeu_epi32(ids, first, keptIds);
  _mm512_mask_storeu_ps(gates, first, keptGates);
  clearEmptySlots(k, kk, ids, gates);
}

// Compare-exchange: a keeps the larger.
HWY_INLINE void Exchange(__m512& a, __m512& b) {
  const __m512 larger = _mm512_max_ps(a, b);
  b = _mm512_min_ps(a, b);
  a = larger;
}

// Rows t of `r` (16 vectors) to columns: lane t of r[j] becomes lane j of r[t]. Four
// rounds of 16 two-source shuffles.
HWY_INLINE void Transpose16(__m512 (&r)[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
    t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
    r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xDD);
  }
}

// One step of moving rows to lanes, for lane bit `bit`: of two vectors whose lanes hold
// tokens that agree with the lane index below `bit`, a's tokens having the bit clear and
// b's set, the lanes already right stay by a blend (into a) and the others cross by one
// two-source permute (into b). Both then hold tokens that agree with the lane index up to
// and including `bit`.
HWY_INLINE void CrossLaneBit(int bit, __m512& a, __m512& b) {
  // Lanes that take b's in the blend, and the crossing permute (lane l takes lane
  // l ^ 2^bit of a, or of b where l has the bit: index 16 + ...).
  constexpr __mmask16 kFromB[4] = {0xAAAA, 0xCCCC, 0xF0F0, 0xFF00};
  const __m512i cross[4] = {
      _mm512_set_epi32(30, 15, 28, 13, 26, 11, 24, 9, 22, 7, 20, 5, 18, 3, 16, 1),
      _mm512_set_epi32(29, 28, 15, 14, 25, 24, 11, 10, 21, 20, 7, 6, 17, 16, 3, 2),
      _mm512_set_epi32(27, 26, 25, 24, 15, 14, 13, 12, 19, 18, 17, 16, 7, 6, 5, 4),
      _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8)};
  const __m512 stay = _mm512_mask_blend_ps(kFromB[bit], a, b);
  b = _mm512_permutex2var_ps(a, cross[bit], b);
  a = stay;
}

// Rows t of `r` (16 vectors) to lanes: lane t of the result holds row t's 16 keys, each
// in some vector. The network needs no more (a key carries its id), and that is cheaper
// than a transpose: per lane bit b, of two vectors whose rows differ in bit b, the lanes
// already right stay by a blend and the others cross by one two-source permute, so half
// the operations are blends, which need not wait for the one shuffle port (E = 64, k = 8:
// 22.9 -> 20.6 ns a token against Transpose16).
HWY_INLINE void GatherRowsToLanes(__m512 (&r)[16]) {
#pragma GCC unroll 4
  for (int bit = 0; bit < 4; ++bit) {
    const int s = 1 << bit;
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if ((i & s) == 0) CrossLaneBit(bit, r[i], r[i + s]);
    }
  }
}

// Knuth's 19-comparator network for 8, as index pairs: the larger of each pair goes to the
// first index.
inline constexpr int kSortEightPairs[19][2] = {
    {0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
    {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};

// Sorts 8 key vectors lane-wise, largest first. Unrolled, so that the vectors stay in
// registers (as a loop they went to the stack, each exchange waiting on the last one's
// stores).
HWY_INLINE void SortEight(__m512* x) {
#pragma GCC unroll 19
  for (const auto& pair : kSortEightPairs) Exchange(x[pair[0]], x[pair[1]]);
}

// One comparator of a merging network pruned to the outputs read: the larger goes to
// `high` and, where a later step or the output reads it, the smaller to `low`.
struct PrunedStep {
  int high;
  int low;
  bool keepLow;
};

// a = the N best of the sorted a and b (both N long), sorted; returns the (N + 1)-th best,
// the best of the others. Positions 0..N-1 hold a, N..2N-1 b; `steps` is a merging network
// of them pruned to the N + 1 outputs read.
template <int N, size_t kStepCount>
HWY_INLINE __m512 MergeBestPruned(__m512* a, const __m512* b,
                                  const PrunedStep (&steps)[kStepCount]) {
  __m512 x[2 * N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    x[i] = a[i];
    x[N + i] = b[i];
  }
#pragma GCC unroll 20
  for (const PrunedStep& step : steps) {
    const __m512 high = _mm512_max_ps(x[step.high], x[step.low]);
    if (step.keepLow) x[step.low] = _mm512_min_ps(x[step.high], x[step.low]);
    x[step.high] = high;
  }
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) a[i] = x[i];
  return x[N];
}

// a = the 8 best of the sorted a and b, sorted; returns the 9th best, the best of the
// other 8. Batcher's odd-even merge of the two lists (25 comparators), pruned to the nine
// outputs read: 20 comparators, 33 min/max, where the bitonic merge with a max over what
// it drops took 47 (E = 64, k = 8: 20.6 -> 19.6 ns a token).
HWY_INLINE __m512 MergeBestEight(__m512* a, const __m512* b) {
  static constexpr PrunedStep kSteps[20] = {
      {0, 8, true},   {4, 12, false}, {4, 8, true},   {2, 10, true},  {6, 14, false},
      {6, 10, false}, {2, 4, true},   {6, 8, true},   {1, 9, true},   {5, 13, false},
      {5, 9, true},   {3, 11, true},  {7, 15, false}, {7, 11, false}, {3, 5, true},
      {7, 9, false},  {1, 2, true},   {3, 4, true},   {5, 6, true},   {7, 8, true}};
  return MergeBestPruned<8>(a, b, kSteps);
}

// Knuth's 5-comparator network for 4 (as kSortEightPairs).
inline constexpr int kSortFourPairs[5][2] = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}};

// Batcher's odd-even merge of two sorted lists of 4 (positions 0..3 and 4..7) into one
// of 8, as index pairs.
inline constexpr int kMergeFourPairs[9][2] = {{0, 4}, {2, 6}, {2, 4}, {1, 5}, {3, 7},
                                              {3, 5}, {1, 2}, {3, 4}, {5, 6}};

// a = the 4 best of the sorted a and b, sorted; returns the 5th best. kMergeFourPairs
// pruned to the five outputs read: 8 comparators, 13 min/max.
HWY_INLINE __m512 MergeBestFour(__m512* a, const __m512* b) {
  static constexpr PrunedStep kSteps[8] = {{0, 4, true}, {2, 6, false}, {2, 4, true},
                                           {1, 5, true}, {3, 7, false}, {3, 5, false},
                                           {1, 2, true}, {3, 4, true}};
  return MergeBestPruned<4>(a, b, kSteps);
}

// Sorts a bitonic sequence of N key vectors lane-wise, largest first: half-cleaners of
// N, N / 2, ..., 2 (Batcher's bitonic merge).
template <int N>
HWY_INLINE void BitonicClean(__m512* x) {
#pragma GCC unroll 4
  for (int half = N / 2; half >= 1; half /= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      if ((i & half) == 0) Exchange(x[i], x[i + half]);
    }
  }
}

// Sorts 16 key vectors lane-wise, largest first: two sorted groups of 8, split into the
// 8 best and the 8 others (both bitonic), each cleaned. 38 + 8 + 24 comparators.
HWY_INLINE void SortSixteen(__m512* x) {
  SortEight(x);
  SortEight(x + 8);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) Exchange(x[i], x[15 - i]);
  BitonicClean<8>(x);
  BitonicClean<8>(x + 8);
}

// a = the 16 best of the sorted a and b, sorted; returns the 17th best, the best of the
// other 16. The larger of a[i] and b[15 - i] are the 16 best (a bitonic sequence) and the
// smaller the others, of which only the best is wanted.
HWY_INLINE __m512 MergeBestSixteen(__m512* a, const __m512* b) {
  __m512 dropped = _mm512_min_ps(a[0], b[15]);
  a[0] = _mm512_max_ps(a[0], b[15]);
#pragma GCC unroll 16
  for (int i = 1; i < 16; ++i) {
    dropped = _mm512_max_ps(dropped, _mm512_min_ps(a[i], b[15 - i]));
    a[i] = _mm512_max_ps(a[i], b[15 - i]);
  }
  BitonicClean<16>(a);
  return dropped;
}

// One block's 16 key vectors sorted enough for the K best: block[0..K) the block's K best,
// sorted; returns the best of its other keys (-inf when K = 16: none).
template <int K>
HWY_INLINE __m512 SortBlock(__m512 (&block)[16]) {
  if constexpr (K == 4) {
    // Four sorted quarters, merged in pairs and the pairs merged.
#pragma GCC unroll 4
    for (int q = 0; q < 16; q += 4) {
#pragma GCC unroll 5
      for (const auto& pair : kSortFourPairs) Exchange(block[q + pair[0]], block[q + pair[1]]);
    }
    const __m512 low = MergeBestFour(block, block + 4);
    const __m512 high = MergeBestFour(block + 8, block + 12);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) block[4 + i] = block[8 + i];
    return _mm512_max_ps(_mm512_max_ps(low, high), MergeBestFour(block, block + 4));
  } else if constexpr (K == 8) {
    SortEight(block);
    SortEight(block + 8);
    return MergeBestEight(block, block + 8);
  } else {
    static_assert(K == 16, "the network keeps 4, 8 or 16");
    SortSixteen(block);
    return _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  }
}

// key = the K best of the sorted key and block (both K long); returns the best dropped.
template <int K>
HWY_INLINE __m512 MergeBest(__m512* key, const __m512* block) {
  if constexpr (K == 4) {
    return MergeBestFour(key, block);
  } else if constexpr (K == 8) {
    return MergeBestEight(key, block);
  } else {
    return MergeBestSixteen(key, block);
  }
}

// a / b, with 1 / b (correctly rounded) given: one division serves a whole column. The
// quotient q = a * (1 / b) is within 1 ulp, its remainder a - q b is exact (one FMA), and
// q + remainder * (1 / b) is then the correctly rounded a / b (Markstein's theorem), as
// VDIVPS would give, for normal operands and quotient; below that it stays within an ulp.
HWY_INLINE __m512 DivideWithReciprocal(__m512 a, __m512 b, __m512 reciprocalB) {
  const __m512 q = _mm512_mul_ps(a, reciprocalB);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(q, b, a), reciprocalB, q);
}

// Routes `rows` (<= 16) rows of R 16-lane vectors each, lane t on row t * kStep of `x`
// (ForEachLaneGroup), keeping the K (8 or 16) best keys; returns the rows not written (bit
// i: lane i's row) for the general path. kFull: 16 rows of exactly 16 R experts, the common
// case, whose loads are then at constant offsets from `x`. A runtime row length wants a
// register per row, more than there are: the spilled row addresses, their reloads and the
// masked-load branches were a third of the group's instructions (E = 64, k = 8, rows in L2:
// 17.3 -> 16.2 ns a token).
template <int R, int K, bool kProbs, bool kFull, int kStep = 1>
HWY_INLINE uint32_t LaneNetworkGroup(const float* x, int32_t rows, int32_t experts, int32_t k,
                                     int32_t* ids, float* gates) {
  constexpr int G = kNetworkGroup;
  using Keys = OrderKeys<(R <= 4 ? 6 : R <= 16 ? 8 : 9)>;  // the code bits E needs
  static_assert(16 * R <= Keys::kMaxExperts, "one code per expert");
  if constexpr (kFull) {
    rows = G;
    experts = 16 * R;
  }
  const int32_t kk = std::min(k, experts);
  uint32_t left = 0;
  // Lane t's 16 logits of block b, from memory; lanes past E read -inf.
  // The line lane t reads a group later (the next group's row, or with kStep the next row)
  // is prefetched with each load: a group reads 16 rows a block at a time, strides the
  // hardware prefetchers do not follow once rows span pages (E = 256: 174 against 72 ns a
  // token out of L3 and L2).
  const auto loadBlock = [&](int t, int b) {
    const float* row = x + int64_t{std::min(t, rows - 1)} * kStep * experts;  // padding: the last
    PrefetchRowLine(row + 16 * b, NextGroupRowBytes<kStep>(experts));
    return 16 * (b + 1) <= experts
               ? _mm512_loadu_ps(row + 16 * b)
               : _mm512_mask_loadu_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()),
                                      RealLanes(experts, b), row + 16 * b);
  };
  // Per 16-expert block: the 16 rows' keys (moved to their lanes), sorted enough for the
  // block's K best, then merged into the best K so far. Block by block, so that only a
  // block's keys and the best K are live.
  __m512 key[K];  // the K best keys of every lane, best first
  __m512 others;  // the best key not among them
#pragma GCC unroll 4
  for (int b = 0; b < R; ++b) {
    __m512 block[16];
#pragma GCC unroll 16
    for (int t = 0; t < G; ++t) block[t] = Keys::OfRowVector(FiniteForKeys(loadBlock(t, b)), b);
    GatherRowsToLanes(block);
    const __m512 dropped = SortBlock<K>(block);
    if (b == 0) {
#pragma GCC unroll 16
      for (int s = 0; s < K; ++s) key[s] = block[s];
      others = dropped;
    } else {
      others = _mm512_max_ps(_mm512_max_ps(others, dropped), MergeBest<K>(key, block));
    }
  }
  // A NaN or +inf logit has a key in FLT_MAX's tie zone (FiniteForKeys), so the row's best
  // does: the general path writes it (so it does a row whose best is FLT_MAX). Rows of
  // only -inf tie at -FLT_MAX, which the zone checks below send there too.
  left |= Keys::AtFloatMax(key[0]);
  const int32_t last = std::clamp(kk, 1, K) - 1;  // the kk-th slot (kk >= 1)
  const __m512 firstLeftOut = kk < K ? key[std::min(last + 1, K - 1)] : others;

  // The kept values, gathered from the rows by id (padding lanes re-read the last row;
  // ids stay in range even for rows handed back), and exp(kept - best).
  __m512i id[K];
  __m512 value[K];
  __m512 gate[K];
  const __m512i lastId = _mm512_set1_epi32(experts - 1);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i rowStart = _mm512_mullo_epi32(_mm512_min_epi32(lane, _mm512_set1_epi32(rows - 1)),
                                              _mm512_set1_epi32(kStep * experts));
  __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    id[s] = _mm512_min_epi32(Keys::Ids(key[s]), lastId);
    value[s] = _mm512_i32gather_ps(_mm512_add_epi32(rowStart, id[s]), x, 4);
  }

  // Lanes whose decision is not settled by the keys: the general path takes them. What
  // needs only the keys comes before the exps, which wait for the gathers.
  __mmask16 bad = 0;
  if constexpr (!kProbs) {
    // The kk-th kept and the best left out, or two kept neighbours, in one tie zone.
    bad = _mm512_cmp_ps_mask(firstLeftOut, Keys::ZoneBottom(key[last]), _CMP_GE_OQ);
#pragma GCC unroll 16
    for (int s = 0; s + 1 < K; ++s) {
      if (s + 1 >= kk) break;
      bad |= Keys::SameZone(key[s], key[s + 1]);
    }
  }
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    // exp(best - best) = 1 exactly, as ExpNonPositive(0) also gives.
    gate[s] = s == 0 ? _mm512_set1_ps(1.0f) : ExpNonPositive(_mm512_sub_ps(value[s], value[0]));
    sum = _mm512_add_ps(sum, gate[s]);
  }
  if constexpr (kProbs) {
    // Probabilities mode selects on p = e / S, e = exp(x - max), with S the sum of every
    // e: the same order as the logits', except where exp or the division by S rounds two
    // experts onto one p, a tie the spec breaks by index. The kept e (the best's is 1, so
    // they are exact for the spec's max) must therefore fall by more than the factor
    // 1 - 2^-19, and every e left out must lie that far below the kk-th: beyond it two p
    // differ by more than twice binary32's relative rounding error, whenever the kk-th p is
    // normal. S lies in [1, E <= 2^9], so a kk-th e of at least 2^-116 gives p >= 2^-125.
    // S itself cancels from the gates (p / sum of kept p = e / sum of kept e), so it is
    // never formed. Every logit left out is at most the top of the best left-out key's tie
    // zone, and exp is increasing up to its 1.06 ulp, inside the margin.
    const __m512 shrink = _mm512_set1_ps(1.0f - 0x1p-19f);
    const __m512 leftOutTop = Keys::ZoneTop(firstLeftOut);
    const __m512 leftOutExp =
        ExpNonPositive(_mm512_min_ps(_mm512_sub_ps(leftOutTop, value[0]), _mm512_setzero_ps()));
    bad |= _mm512_cmp_ps_mask(leftOutExp, _mm512_mul_ps(gate[last], shrink), _CMP_NLT_UQ);
    bad |= _mm512_cmp_ps_mask(gate[last], _mm512_set1_ps(0x1p-116f), _CMP_NGE_UQ);
#pragma GCC unroll 16
    for (int s = 0; s + 1 < K; ++s) {
      if (s + 1 >= kk) break;
      bad |= _mm512_cmp_ps_mask(gate[s + 1], _mm512_mul_ps(gate[s], shrink), _CMP_NLT_UQ);
    }
  }
  const __m512 perSum = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    gate[s] = DivideWithReciprocal(gate[s], sum, perSum);
  }
  left |= bad;

  // The next group's lines of ids and gates, so that its stores find them in L1: rows out
  // of L3 otherwise wait on the stores' line fills (E = 64, k = 8: 20.2 -> 19.4 ns a
  // token). As for the rows, past the end does not fault; addresses formed as integers.
  // Only for consecutive rows: a strided group writes one row of each lane's stream, and
  // the next group the rows just after them, lines its own stores have mostly brought in.
  if constexpr (kStep == 1) {
    const uint64_t groupBytes = sizeof(float) * G * uint64_t(k);
    for (uint64_t at = groupBytes; at < 2 * groupBytes; at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(ids) + at),
                   _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(gates) + at),
                   _MM_HINT_T0);
    }
  }
  if constexpr (K == 8) {
    // Back to rows: row t's gates in lanes 0..7, its ids in lanes 8..15.
    __m512 out[16];
#pragma GCC unroll 8
    for (int s = 0; s < K; ++s) {
      out[s] = s < kk ? gate[s] : _mm512_setzero_ps();
      out[8 + s] = s < kk ? _mm512_castsi512_ps(id[s]) : _mm512_setzero_ps();
    }
    Transpose16(out);
    for (int32_t t = 0; t < rows; ++t) {
      if ((left >> t) & 1) continue;
      StoreKept(k, kk,
                _mm512_castsi256_si512(_mm512_extracti32x8_epi32(_mm512_castps_si512(out[t]), 1)),
                out[t], ids + int64_t{t} * kStep * k, gates + int64_t{t} * kStep * k);
    }
  } else {
    // Back to rows, a transpose each: row t's gates and its ids, 16 lanes apiece.
    __m512 outGates[16];
    __m512 outIds[16];
#pragma GCC unroll 16
    for (int s = 0; s < K; ++s) {
      outGates[s] = s < kk ? gate[s] : _mm512_setzero_ps();
      outIds[s] = s < kk ? _mm512_castsi512_ps(id[s]) : _mm512_setzero_ps();
    }
    Transpose16(outGates);
    Transpose16(outIds);
    for (int32_t t = 0; t < rows; ++t) {
      if ((left >> t) & 1) continue;
      StoreKept(k, kk, _mm512_castps_si512(outIds[t]), outGates[t], ids + int64_t{t} * kStep * k,
                gates + int64_t{t} * kStep * k);
    }
  }
  return left & ((1u << rows) - 1u);  // padding rows are never written
}

// Calls fn with std::integral_constant<int, R>: the 16-expert blocks of a row, R * 16 >= E,
// from 2, 3, 4, 8, 16, 24, 32 (past 64 experts a few blocks of -inf cost less than more
// code).
template <class Fn>
HWY_INLINE void WithNetworkBlocks(int32_t experts, Fn fn) {
  if (experts <= 32) {
    fn(std::integral_constant<int, 2>());
  } else if (experts <= 48) {
    fn(std::integral_constant<int, 3>());
  } else if (experts <= 64) {
    fn(std::integral_constant<int, 4>());
  } else if (experts <= 128) {
    fn(std::integral_constant<int, 8>());
  } else if (experts <= 256) {
    fn(std::integral_constant<int, 16>());
  } else if (experts <= 384) {
    fn(std::integral_constant<int, 24>());
  } else {
    fn(std::integral_constant<int, 32>());
  }
}

#else
#undef MOE_LANE_NETWORK
#define MOE_LANE_NETWORK 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
