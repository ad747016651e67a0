// One-token routing kernels for AVX-512 rows of 17..256 experts (2 to 16 16-lane
// vectors) and kk = min(k, E) in 1..8. Re-included once per Highway
// target by route_simd.cpp (foreach_target), hence the toggle guard.
//
// Selection without a sorted list:
// 1. T = the kk-th largest of the 16 lane-wise maxima (a 16-lane bitonic sort). kk lanes
//    hold a maximum >= T, each a distinct element, so every one of the kk best is >= T.
//    On random rows about 10 elements pass at E = 64, k = 8.
// 2. The elements >= T are compressed, in index order, into one vector (more than 16:
//    the caller's general path).
// 3. The candidates are sorted as integer keys (the value's order-preserving image with
//    its low 4 bits replaced by the candidate's lane), so the kept ones come out in rank
//    order with their lanes. Where two of the deciding keys agree above those 4 bits (an
//    exact tie, +0 == -0 included, or values within 2^-19) the caller's general path,
//    which breaks ties to the lower index, routes that token instead.
// Every token takes the fast path or the general one by its own values alone, so the
// result is bitwise independent of its batch and of the thread count.
#if defined(MOE_IMPL_ROW16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_ROW16_INL_H_
#undef MOE_IMPL_ROW16_INL_H_
#else
#define MOE_IMPL_ROW16_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MOE_ROW16
#define MOE_ROW16 1

namespace r16 = hwy::HWY_NAMESPACE;

inline constexpr int32_t kRow16MaxExperts = 256;
inline constexpr int32_t kRow16MaxKept = 8;

inline bool UsesRow16(int32_t experts, int32_t kk) {
  return experts > 16 && experts <= kRow16MaxExperts && kk >= 1 && kk <= kRow16MaxKept;
}

// Tokens are routed in groups of kRow16Group, one phase at a time over the group, so that
// the long dependency chains of one token (the sort, compress, rank, exp) overlap the
// other tokens' instead of waiting on each other.
inline constexpr int32_t kRow16Group = 8;

// Sorting network for 16 lanes, largest first, applied to every token of a group stage by
// stage. Every stage compares lane i with a partner lane and the lower lane of each pair
// keeps the larger value, so only four lane masks are needed (compare distance J = 1, 2,
// 4, 8): merging two descending runs of K/2 compares lane i with its mirror in the block
// of K, then half-cleaners at distances K/4 .. 1 finish the merge. No NaN here; +0 and -0
// compare equal, so either may come first, which no threshold compare can tell apart.
template <int J>
constexpr __mmask16 LowerLanes() {
  unsigned mask = 0;
  for (int i = 0; i < 16; ++i) {
    if ((i & J) == 0) mask |= 1u << i;
  }
  return static_cast<__mmask16>(mask);
}

// The lane operations of the network for float and int32 lanes.
HWY_INLINE __m512 LaneMin(__m512 a, __m512 b) {
  return _mm512_min_ps(a, b);
}
HWY_INLINE __m512i LaneMin(__m512i a, __m512i b) {
  return _mm512_min_epi32(a, b);
}
HWY_INLINE __m512 LaneMaxInto(__m512 src, __mmask16 m, __m512 a, __m512 b) {
  return _mm512_mask_max_ps(src, m, a, b);
}
HWY_INLINE __m512i LaneMaxInto(__m512i src, __mmask16 m, __m512i a, __m512i b) {
  return _mm512_mask_max_epi32(src, m, a, b);
}
template <int kImm>
HWY_INLINE __m512 InBlockShuffle(__m512 x) {
  return _mm512_permute_ps(x, kImm);
}
template <int kImm>
HWY_INLINE __m512i InBlockShuffle(__m512i x) {
  return _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(kImm));
}
HWY_INLINE __m512 SwapBlockPairs(__m512 x) {
  return _mm512_shuffle_f32x4(x, x, 0xB1);
}
HWY_INLINE __m512i SwapBlockPairs(__m512i x) {
  return _mm512_shuffle_i32x4(x, x, 0xB1);
}
HWY_INLINE __m512 Permute(__m512i idx, __m512 x) {
  return _mm512_permutexvar_ps(idx, x);
}
HWY_INLINE __m512i Permute(__m512i idx, __m512i x) {
  return _mm512_permutexvar_epi32(idx, x);
}

// One stage over the group. The min and the masked max form a serial pair, but the
// group's eight independent rows hide that latency.
template <int J, class Vec, class Partner>
HWY_INLINE void SortStage(Vec (&v)[kRow16Group], Partner partner) {
#pragma GCC unroll 8
  for (int g = 0; g < kRow16Group; ++g) {
    const Vec p = partner(v[g]);
    v[g] = LaneMaxInto(LaneMin(v[g], p), LowerLanes<J>(), v[g], p);
  }
}

template <class Vec>
HWY_INLINE void SortLanesDescending(Vec (&v)[kRow16Group]) {
  const __m512i mirror8 = _mm512_set_epi32(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i mirror16 = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const auto swap1 = [](Vec x) { return InBlockShuffle<0xB1>(x); };
  const auto swap2 = [](Vec x) { return InBlockShuffle<0x4E>(x); };
  SortStage<1>(v, swap1);                                          // runs of 2
  SortStage<2>(v, [](Vec x) { return InBlockShuffle<0x1B>(x); });  // runs of 4
  SortStage<1>(v, swap1);
  SortStage<4>(v, [&](Vec x) { return Permute(mirror8, x); });  // runs of 8
  SortStage<2>(v, swap2);
  SortStage<1>(v, swap1);
  SortStage<8>(v, [&](Vec x) { return Permute(mirror16, x); });  // 16
  SortStage<4>(v, [](Vec x) { return SwapBlockPairs(x); });
  SortStage<2>(v, swap2);
  SortStage<1>(v, swap1);
}

// Keeps the compiler from replacing the memory broadcasts that follow a store of `p` by
// lane permutations of the stored register (which cost two shuffles each).
HWY_INLINE void ReadBackFromMemory(const void* p) {
  asm volatile("" : : "r"(p) : "memory");
}

// The kk-th largest lane of each sorted row, as a vector.
HWY_INLINE void KthLargest(const __m512 (&sorted)[kRow16Group], int32_t kk,
                           __m512 (&t)[kRow16Group]) {
  alignas(64) float lanes[kRow16Group][16];
#pragma GCC unroll 8
  for (int g = 0; g < kRow16Group; ++g) _mm512_store_ps(lanes[g], sorted[g]);
  ReadBackFromMemory(lanes);
#pragma GCC unroll 8
  for (int g = 0; g < kRow16Group; ++g) t[g] = _mm512_set1_ps(lanes[g][kk - 1]);
}

// The real lanes of a row's vector r: experts 16 r + lane < E.
HWY_INLINE __mmask16 RealLanes(int32_t experts, int r) {
  const int32_t n = std::clamp(experts - 16 * r, 0, 16);
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// A row's R vectors (R * 16 >= E); lanes past E read -inf, which no threshold passes, is
// neutral for the maximum, and has exp 0 (masked loads: nothing past E is read).
template <int R>
struct Row16 {
  __m512 v[R];

  HWY_INLINE Row16(const float* x, int32_t experts) {
    const __m512 minusInf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      v[r] = 16 * (r + 1) <= experts
                 ? _mm512_loadu_ps(x + 16 * r)
                 : _mm512_mask_loadu_ps(minusInf, RealLanes(experts, r), x + 16 * r);
    }
  }

  // A NaN logit makes the sum NaN (so does +inf beside -inf in one lane: the general
  // path then sorts it out).
  HWY_INLINE bool MaybeNaN() const {
    __m512 sum = v[0];
#pragma GCC unroll 16
    for (int r = 1; r < R; ++r) sum = _mm512_add_ps(sum, v[r]);
    return _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) != 0;
  }
};

template <int R>
HWY_INLINE __m512 LaneMax(const __m512 (&v)[R]) {
  __m512 m = v[0];
#pragma GCC unroll 16
  for (int r = 1; r < R; ++r) m = _mm512_max_ps(m, v[r]);
  return m;
}

// The candidates of one row: elements >= t (real lanes only), compressed in index order:
// their values and their expert ids.
struct Candidates {
  alignas(64) float val[kRow16MaxExperts + 16];  // room for every compressed vector's store
  alignas(64) int32_t id[kRow16MaxExperts + 16];
  int32_t count;
};

template <int R>
HWY_INLINE void CollectCandidates(const __m512 (&v)[R], int32_t experts, __m512 t, Candidates& c) {
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  int32_t count = 0;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    __mmask16 pass = _mm512_cmp_ps_mask(v[r], t, _CMP_GE_OQ);
    if (16 * (r + 1) > experts) pass = static_cast<__mmask16>(pass & RealLanes(experts, r));
    _mm512_storeu_ps(c.val + count, _mm512_maskz_compress_ps(pass, v[r]));
    _mm512_storeu_si512(c.id + count, _mm512_maskz_compress_epi32(
                                          pass, _mm512_add_epi32(iota, _mm512_set1_epi32(16 * r))));
    count += __builtin_popcount(pass);
  }
  c.count = count;
}

// The kept candidates of one row in rank order (best first), in the first kk lanes.
struct Kept {
  __m512 val;
  __m512i id;
};

// Sort keys of the candidates: order-preserving integer images of the values (+0 and -0
// both 0) with the low 4 bits replaced by 15 - lane, so that a descending sort of the keys
// orders the candidates by value and carries each one's lane along. Padding lanes (past
// count) get the smallest key. Cutting 4 bits can only merge values closer than 2^-19
// relative; RankedWithoutTies checks that no two of the first kk + 1 are that close.
HWY_INLINE __m512i CandidateKeys(const Candidates& c, __m512 values) {
  const __m512i bits = _mm512_castps_si512(_mm512_add_ps(values, _mm512_setzero_ps()));
  const __m512i ordered = _mm512_xor_si512(
      bits, _mm512_and_si512(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(0x7FFFFFFF)));
  const __m512i laneCode = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // Bitwise select: the high 28 bits from `ordered`, the low 4 from `laneCode`.
  const __m512i keys = _mm512_ternarylogic_epi32(_mm512_set1_epi32(~15), ordered, laneCode, 0xCA);
  return _mm512_mask_mov_epi32(_mm512_set1_epi32(std::numeric_limits<int32_t>::min()),
                               static_cast<__mmask16>((1u << c.count) - 1u), keys);
}

// False when two neighbours among sorted slots 0..min(kk, count-1) have the same value
// bits above the lane code: an exact tie (the general path breaks it by index) or two
// values too close for the cut keys to order.
HWY_INLINE bool RankedWithoutTies(const Candidates& c, __m512i sorted, int32_t kk) {
  const __m512i next = _mm512_alignr_epi32(sorted, sorted, 1);
  const auto pairs = static_cast<__mmask16>((1u << std::min(kk, c.count - 1)) - 1u);
  return _mm512_mask_testn_epi32_mask(pairs, _mm512_xor_si512(sorted, next),
                                      _mm512_set1_epi32(~15)) == 0;
}

HWY_INLINE Kept KeptInRankOrder(const Candidates& c, __m512 values, __m512i sorted) {
  const __m512i lane = _mm512_andnot_si512(sorted, _mm512_set1_epi32(15));  // 15 - code
  return {_mm512_permutexvar_ps(lane, values),
          _mm512_permutexvar_epi32(lane, _mm512_load_si512(c.id))};
}

// Writes the first kk ids and gates and empties the rest.
HWY_INLINE void StoreKept(int32_t k, int32_t kk, __m256i keptIds, __m256 keptGates, int32_t* ids,
                          float* gates) {
  const auto first = static_cast<__mmask8>((1u << kk) - 1u);
  _mm256_mask_storeu_epi32(ids, first, keptIds);
  _mm256_mask_storeu_ps(gates, first, keptGates);
  clearEmptySlots(k, kk, ids, gates);
}

// Per 256-bit half, the sum of its 8 lanes in every lane (a fixed order: batch invariant).
HWY_INLINE __m512 SumOfHalves(__m512 v) {
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  return _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
}

// Two rows' kept values side by side (row a in lanes 0..7, row b in 8..15).
HWY_INLINE __m512 Halves(__m512 a, __m512 b) {
  return _mm512_insertf32x8(a, _mm512_castps512_ps256(b), 1);
}

// Logits mode on `rows` (<= kRow16Group) rows: top-kk on the logits, then
// exp(kept - best) for the kept, summed lane-wise, one division each. Returns the rows
// not written (bit i: row i), for the general path: a NaN or +inf logit, more than 16
// candidates, or an exact tie among them.
template <int R>
HWY_INLINE uint32_t Row16LogitsGroup(const float* x, int32_t rows, int32_t experts, int32_t k,
                                     int32_t* ids, float* gates) {
  constexpr int G = kRow16Group;
  const int32_t kk = std::min(k, experts);
  uint32_t left = 0;
  __m512 sorted[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {  // rows past `rows` repeat the last one, never written
    const Row16<R> row(x + int64_t{std::min(g, rows - 1)} * experts, experts);
    sorted[g] = LaneMax(row.v);
    if (row.MaybeNaN()) left |= 1u << g;
  }
  SortLanesDescending(sorted);
  __m512 t[G];
  KthLargest(sorted, kk, t);
  Candidates cand[G];
  for (int32_t g = 0; g < rows; ++g) {
    const Row16<R> row(x + int64_t{g} * experts, experts);
    CollectCandidates(row.v, experts, t[g], cand[g]);
    if (cand[g].count > 16) left |= 1u << g;
  }
  __m512i keys[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    keys[g] = ((left >> g) & 1) != 0 || g >= rows
                  ? _mm512_setzero_si512()
                  : CandidateKeys(cand[g], _mm512_load_ps(cand[g].val));
  }
  SortLanesDescending(keys);
  Kept kept[G + 1];
  for (int32_t g = 0; g <= rows; ++g) kept[g].val = _mm512_setzero_ps();
  for (int32_t g = 0; g < rows; ++g) {
    if ((left >> g) & 1) continue;
    if (!RankedWithoutTies(cand[g], keys[g], kk)) {
      left |= 1u << g;
      continue;
    }
    kept[g] = KeptInRankOrder(cand[g], _mm512_load_ps(cand[g].val), keys[g]);
  }
  // Softmax of two rows per vector. The best is finite unless a logit is +inf (the
  // general path then writes NaN gates); -inf is never a candidate (T > -inf here).
  const auto first = static_cast<unsigned>((1u << kk) - 1u);
  const auto keptLanes = static_cast<__mmask16>(first | (first << 8));
  const __m512i bestLane = _mm512_set_epi32(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  const r16::Full512<float> d;
  for (int32_t g = 0; g < rows; g += 2) {
    const __m512 v = _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()),
                                        keptLanes, Halves(kept[g].val, kept[g + 1].val));
    const __m512 best = _mm512_permutexvar_ps(bestLane, v);
    const auto e = r16::Exp(d, r16::Vec512<float>{_mm512_sub_ps(v, best)});
    const __m512 gate = _mm512_div_ps(e.raw, SumOfHalves(e.raw));
    for (int32_t h = 0; h < 2 && g + h < rows; ++h) {
      const int32_t row = g + h;
      if ((left >> row) & 1) continue;
      if (std::isinf(_mm512_cvtss_f32(kept[row].val))) {
        left |= 1u << row;
        continue;
      }
      StoreKept(k, kk, _mm512_castsi512_si256(kept[row].id),
                h == 0 ? _mm512_castps512_ps256(gate) : _mm512_extractf32x8_ps(gate, 1),
                ids + int64_t{row} * k, gates + int64_t{row} * k);
    }
  }
  return left & ((1u << rows) - 1u);  // padding rows are never written
}

// Probabilities mode on `rows` (<= kRow16Group) rows: p = exp(x - max) / sum for every
// expert as the spec orders it, top-kk on p, gates p / (the kept p summed). Only the
// candidates are divided: division by the sum rounds monotonically, so selection can be
// done on the exps, except that exps a hair apart may round to the same p (a tie the
// spec breaks by index). The candidates are therefore every exp >= T (1 - 2^-21): below
// that an exp's p is strictly below T's p whenever T's p is normal (the two quotients
// differ by more than twice binary32's relative rounding error), which is checked.
// Returns the rows not written, for the general path.
template <int R>
HWY_INLINE uint32_t Row16ProbsGroup(const float* x, int32_t rows, int32_t experts, int32_t k,
                                    int32_t* ids, float* gates) {
  constexpr int G = kRow16Group;
  const int32_t kk = std::min(k, experts);
  const r16::Full512<float> d;
  uint32_t left = 0;
  alignas(64) float exps[G][16 * R];
  __m512 total[G];
  __m512 sorted[G];
  for (int g = 0; g < G; ++g) {  // rows past `rows` repeat the last one, never written
    const Row16<R> row(x + int64_t{std::min(g, rows - 1)} * experts, experts);
    const auto m = r16::MaxOfLanes(d, r16::Vec512<float>{LaneMax(row.v)});
    // NaN, +inf or all -inf: the spec's p are all NaN; the general path writes that row.
    if (row.MaybeNaN() || !std::isfinite(r16::GetLane(m))) left |= 1u << g;
    __m512 e[R];
    auto sum = r16::Zero(d);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const auto er = r16::Exp(d, r16::Sub(r16::Vec512<float>{row.v[r]}, m));
      e[r] = er.raw;
      _mm512_store_ps(exps[g] + 16 * r, e[r]);
      sum = r16::Add(sum, er);
    }
    total[g] = r16::SumOfLanes(d, sum).raw;
    sorted[g] = LaneMax(e);
  }
  SortLanesDescending(sorted);
  __m512 t[G];
  KthLargest(sorted, kk, t);
  Candidates cand[G];
  const __m512 margin = _mm512_set1_ps(1.0f - 0x1p-21f);
  for (int32_t g = 0; g < rows; ++g) {
    if ((left >> g) & 1) continue;
    __m512 e[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) e[r] = _mm512_load_ps(exps[g] + 16 * r);
    CollectCandidates(e, experts, _mm512_mul_ps(t[g], margin), cand[g]);
    // The kk-th p must be normal for the margin argument (tiny p underflow into ties).
    if (!(_mm512_cvtss_f32(_mm512_div_ps(t[g], total[g])) >= 0x1p-125f) || cand[g].count > 16) {
      left |= 1u << g;
    }
  }
  __m512 p[G];
  __m512i keys[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    if (((left >> g) & 1) != 0 || g >= rows) {
      keys[g] = _mm512_setzero_si512();
      continue;
    }
    p[g] = _mm512_div_ps(_mm512_load_ps(cand[g].val), total[g]);
    keys[g] = CandidateKeys(cand[g], p[g]);
  }
  SortLanesDescending(keys);
  const auto first = static_cast<__mmask8>((1u << kk) - 1u);
  for (int32_t g = 0; g < rows; ++g) {
    if ((left >> g) & 1) continue;
    if (!RankedWithoutTies(cand[g], keys[g], kk)) {
      left |= 1u << g;
      continue;
    }
    const Kept kept = KeptInRankOrder(cand[g], p[g], keys[g]);
    const __m256 keptP = _mm256_maskz_mov_ps(first, _mm512_castps512_ps256(kept.val));
    // The sum of the kept lanes only (a widening cast would leave the upper half undefined:
    // clang's code put stale lanes there and the sum came out NaN, found by fuzz_route).
    const __m256 keptSum =
        _mm256_set1_ps(_mm512_reduce_add_ps(_mm512_maskz_mov_ps(__mmask16{first}, kept.val)));
    StoreKept(k, kk, _mm512_castsi512_si256(kept.id), _mm256_maskz_div_ps(first, keptP, keptSum),
              ids + int64_t{g} * k, gates + int64_t{g} * k);
  }
  return left & ((1u << rows) - 1u);  // padding rows are never written
}

// Calls fn with std::integral_constant<int, R>: the vector count for E, R * 16 >= E, from
// 2, 3, 4, 8, 16 (past 64 experts a few all -inf vectors cost less than more code).
template <class Fn>
HWY_INLINE void WithRow16Vectors(int32_t experts, Fn fn) {
  if (experts <= 32) {
    fn(std::integral_constant<int, 2>());
  } else if (experts <= 48) {
    fn(std::integral_constant<int, 3>());
  } else if (experts <= 64) {
    fn(std::integral_constant<int, 4>());
  } else if (experts <= 128) {
    fn(std::integral_constant<int, 8>());
  } else {
    fn(std::integral_constant<int, 16>());
  }
}

#else
#undef MOE_ROW16
#define MOE_ROW16 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
