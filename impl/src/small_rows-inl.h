// Token-parallel top-1 and top-2 of AVX-512 rows of 2..16 experts (Mixtral's E = 8,
// k = 2; Llama 4 Scout's E = 16, k = 1): the lane network's keys and checks
// (lane_network-inl.h) with a selection and a write-back cut to one or two kept experts.
// Re-included once per Highway target by route_simd.cpp (foreach_target), hence the
// toggle guard.
//
// Sixteen tokens at a time, one per lane. A row of 16 is one vector; rows of exactly 8
// are read two to a vector and merged while they move to lanes (BestThreeOfRowPairs), as
// rows of up to 16 with k = 1 are (BestTwoOfRows). Each lane keeps its best kk + 1 keys;
// the best kk are kept, the last is the best left out. The rows the keys cannot decide (a
// tie zone at a decision, NaN, +inf, and in probabilities mode exps closer than the
// margin) go back to the caller, as in the lane network, whose reasons hold here unchanged
// (E <= 16 < 2^9). Ids and gates are written a whole vector of tokens at a time (k = 1) or
// interleaved by two permutes (k = 2); for k = 2 the gates come from a second pass over a
// run of groups (SmallRowsGates); rows handed back are written here too and then
// overwritten by the caller.
#if defined(MOE_IMPL_SMALL_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_SMALL_ROWS_INL_H_
#undef MOE_IMPL_SMALL_ROWS_INL_H_
#else
#define MOE_IMPL_SMALL_ROWS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "fast_exp-inl.h"
#include "lane_network-inl.h"
#include "order_keys-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if MOE_LANE_NETWORK
#undef MOE_SMALL_ROWS
#define MOE_SMALL_ROWS 1

// k itself (not min(k, E)): the write-back has k = kk slots a row.
inline bool UsesSmallRows(int32_t experts, int32_t k) {
  return experts >= 2 && experts <= 16 && (k == 1 || k == 2);
}

// The best three keys of two sorted lists of three (a1 > a2 > a3, b1 > b2 > b3; keys are
// distinct): with m = min(a1, b1) and M = max(a2, b2), the second is max(m, M) and the
// third max(min(m, M), max(a3, b3)) (say a1 > b1: if a2 > b1 the third is max(a3, b1), else
// it is M). kThird: the lists have a third; else a3 = b3 = -inf.
template <bool kThird>
HWY_INLINE void MergeBestThree(__m512 (&a)[3], const __m512 (&b)[3]) {
  const __m512 m = _mm512_min_ps(a[0], b[0]);
  const __m512 largerSecond = _mm512_max_ps(a[1], b[1]);
  const __m512 third = _mm512_min_ps(m, largerSecond);
  a[0] = _mm512_max_ps(a[0], b[0]);
  a[1] = _mm512_max_ps(m, largerSecond);
  if constexpr (kThird) {
    a[2] = _mm512_max_ps(third, _mm512_max_ps(a[2], b[2]));
  } else {
    a[2] = third;
  }
}

// The best three keys of each of 16 rows of 8, read two rows to a vector (vector i: rows
// 2i and 2i + 1, lane 8h + j: row 2i + h's expert j), merged while they move to lanes:
// each round pairs vectors whose rows differ in one bit of i and splits them by one
// in-lane or in-half shuffle each into two vectors that hold the same row in every lane
// and different experts, which are then merged, so that the vectors halve every round: 47
// operations, where interleaving the rows, moving every key to lanes (blends and
// cross-lane permutes) and then keeping the best three took 67. Round one's
// VUNPCKL/HPS put i's bit 0 in lane bit 0 (merging expert bit 1), round two's VUNPCKL/HPD
// i's bit 1 in lane bit 1 (expert bit 0), round three's VSHUFF32X4 h in lane bit 2 and
// i's bit 2 in lane bit 3 (expert bit 2). Lane l ends with row 2 i + h, i = (l & 3) +
// 4 (l >> 3), h = (l >> 2) & 1.
HWY_INLINE void BestThreeOfRowPairs(const __m512 (&r)[8], __m512 (&best)[3]) {
  __m512 list[4][3];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512 low = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    const __m512 high = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    list[i][0] = _mm512_max_ps(low, high);
    list[i][1] = _mm512_min_ps(low, high);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 4; i += 2) {
    __m512 low[3];
    __m512 high[3];
#pragma GCC unroll 2
    for (int s = 0; s < 2; ++s) {
      const __m512d a = _mm512_castps_pd(list[i][s]);
      const __m512d b = _mm512_castps_pd(list[i + 1][s]);
      low[s] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      high[s] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
    MergeBestThree<false>(low, high);
#pragma GCC unroll 3
    for (int s = 0; s < 3; ++s) list[i][s] = low[s];
  }
  __m512 high[3];
#pragma GCC unroll 3
  for (int s = 0; s < 3; ++s) {
    best[s] = _mm512_shuffle_f32x4(list[0][s], list[2][s], 0x88);  // 128-bit lanes 0, 2 of each
    high[s] = _mm512_shuffle_f32x4(list[0][s], list[2][s], 0xDD);  // 1, 3
  }
  MergeBestThree<true>(best, high);
}

// The best two keys of each of 16 rows (one vector each), lane t holding row t's: the
// moves of GatherRowsToLanes, each round followed by a lane-wise merge of the two vectors
// it pairs, which then hold the same tokens, so that every round halves the vectors: 88
// operations where moving all keys to lanes and then keeping the best two took 112.
HWY_INLINE void BestTwoOfRows(__m512 (&r)[16], __m512& best, __m512& second) {
  __m512 first[8];
  __m512 next[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    CrossLaneBit(0, r[2 * i], r[2 * i + 1]);
    first[i] = _mm512_max_ps(r[2 * i], r[2 * i + 1]);
    next[i] = _mm512_min_ps(r[2 * i], r[2 * i + 1]);
  }
  // first[i], next[i]: the tokens whose bits above lane bit `bit - 1` are i's, the lanes
  // agreeing with them below; pairs i, i + s differ in the token's bit `bit`.
#pragma GCC unroll 3
  for (int bit = 1; bit < 4; ++bit) {
    const int s = 1 << (bit - 1);
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2 * s) {
      CrossLaneBit(bit, first[i], first[i + s]);
      CrossLaneBit(bit, next[i], next[i + s]);
      const __m512 larger = _mm512_max_ps(first[i], first[i + s]);
      next[i] =
          _mm512_max_ps(_mm512_min_ps(first[i], first[i + s]), _mm512_max_ps(next[i], next[i + s]));
      first[i] = larger;
    }
  }
  best = first[0];
  second = next[0];
}

// Lane bits to row bits: lane l is row l, or for rows of 8 read in pairs (the order
// BestThreeOfRowPairs leaves) row 2 ((l & 3) + 4 (l >> 3)) + ((l >> 2) & 1): lanes 0..3 and
// 8..11 the even rows, the others the odd.
template <bool kPairs>
HWY_INLINE uint32_t RowsOfLanes(uint32_t lanes) {
  if constexpr (!kPairs) return lanes;
  return _pdep_u32(_pext_u32(lanes, 0x0F0Fu), 0x5555u) |
         _pdep_u32(_pext_u32(lanes, 0xF0F0u), 0xAAAAu);
}

// Two slots a row, slot s of row t at 2 t + s, from lane vectors `a` (slot 0) and `b`
// (slot 1): rows 0..7 to the first vector, rows 8..15 to the second, row t from lane t
// or, for rows of 8 read in pairs, lane ((t >> 1) & 3) + 4 (t & 1) + (t & 8) (RowsOfLanes'
// order). Only the first `rows` rows.
template <bool kPairs>
HWY_INLINE void StorePairs(int32_t rows, int32_t* out, __m512i a, __m512i b) {
  const __m512i first =
      kPairs ? _mm512_set_epi32(23, 7, 19, 3, 22, 6, 18, 2, 21, 5, 17, 1, 20, 4, 16, 0)
             : _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i second =
      kPairs ? _mm512_set_epi32(31, 15, 27, 11, 30, 14, 26, 10, 29, 13, 25, 9, 28, 12, 24, 8)
             : _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const auto lowMask = static_cast<__mmask16>(rows >= 8 ? 0xFFFFu : (1u << (2 * rows)) - 1u);
  const auto highMask = static_cast<__mmask16>(rows > 8 ? (1u << (2 * (rows - 8))) - 1u : 0u);
  _mm512_mask_storeu_epi32(out, lowMask, _mm512_permutex2var_epi32(a, first, b));
  _mm512_mask_storeu_epi32(out + 16, highMask, _mm512_permutex2var_epi32(a, second, b));
}

// Groups ahead of the one being routed whose rows are prefetched (kSmallRowsReadAhead)
// and whose ids and gates lines are made writable (kSmallRowsWriteAhead). Out of L2 the
// hardware prefetchers alone left the kernel waiting on memory, on its stores' misses as
// much as its loads' (an Intel Xeon, one core, E = 8, k = 2: 1.4 ns a token with the rows
// in L1, 2.2 at T = 65,536, where a plain loop that reads the rows and writes as much as
// the kernel takes 2.2 too): with both, 1.95-2.0 (bench_family_routers: 383-412 -> 451-471
// M tokens/s; E = 16, k = 1: 235-267 -> 280-291). Reading 2 or 6 groups ahead did as
// well, 16 worse; writing 8 ahead was less steady than 32.
inline constexpr int64_t kSmallRowsReadAhead = 4;
inline constexpr int64_t kSmallRowsWriteAhead = 32;

// Before routing the group of rows from `t0`: the rows kSmallRowsReadAhead groups on
// (experts lines: 16 rows of 4 E bytes) and the ids and gates lines kSmallRowsWriteAhead
// groups on (KK lines each). Addresses past the buffers are fine: a prefetch never faults,
// and they are formed as integers. kPairs: rows of exactly 8.
template <int KK, bool kPairs>
HWY_INLINE void PrefetchSmallRowsAhead(const float* x, int32_t experts, const int32_t* ids,
                                       const float* gates, int64_t t0) {
  if constexpr (kPairs) experts = 8;
  constexpr int64_t G = kNetworkGroup;
  const auto at = [](const void* base, int64_t bytes) {
    return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base) +
                                         static_cast<uintptr_t>(bytes));
  };
  const int64_t rowBytes = (t0 + kSmallRowsReadAhead * G) * experts * int64_t{sizeof(float)};
#pragma GCC unroll 16
  for (int32_t line = 0; line < experts; ++line) {
    _mm_prefetch(static_cast<const char*>(at(x, rowBytes + 64 * line)), _MM_HINT_T0);
  }
  const int64_t slotBytes = (t0 + kSmallRowsWriteAhead * G) * KK * int64_t{sizeof(float)};
#pragma GCC unroll 2
  for (int line = 0; line < KK; ++line) {
    PrefetchForWrite(at(ids, slotBytes + 64 * line));
    PrefetchForWrite(at(gates, slotBytes + 64 * line));
  }
}

// Routes `rows` (<= 16) rows of `experts` (2..16; exactly 8 when kPairs) keeping KK
// (1 or 2 = min(k, E), so k = KK); returns the rows the caller must route (bit i: row i).
// Writes the ids, and the gates for k = 1; for k = 2 stores the second kept logit minus
// the first, lane by lane, in `differences` (16 aligned floats) for SmallRowsGates.
// kFull: 16 rows.
template <int KK, bool kPairs, bool kProbs, bool kFull>
HWY_INLINE uint32_t SmallRowsGroup(const float* x, int32_t rows, int32_t experts, int32_t* ids,
                                   float* gates, float* differences) {
  constexpr int G = kNetworkGroup;
  constexpr int N = kPairs ? 8 : 16;  // key vectors
  using Keys = OrderKeys<kPairs ? 3 : 4>;
  if constexpr (kFull) rows = G;
  if constexpr (kPairs) experts = 8;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const auto rowAt = [&](int t) { return x + int64_t{std::min(t, rows - 1)} * experts; };

  __m512 key[N];
  __m512 raw[kPairs ? N : 1];  // kPairs: the rows as read, for the kept values
  if constexpr (kPairs) {
    // Lane l: expert l & 7, code 7 - (l & 7).
    const __m512i code = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i valueBits = _mm512_set1_epi32(~Keys::kCodeMask);
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) {
      // Tokens 2i and 2i + 1 (padding rows of a short group re-read the last row).
      const __m256 lo = _mm256_loadu_ps(rowAt(2 * i));
      const __m256 hi = _mm256_loadu_ps(rowAt(2 * i + 1));
      const __m512 both = kFull ? _mm512_loadu_ps(x + 16 * i)
                                : _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
      raw[i] = both;
      key[i] = SelectBits(_mm512_castps_si512(FiniteForKeys(both)), valueBits, code);
    }
  } else {
    const auto real = static_cast<__mmask16>((1u << experts) - 1u);
#pragma GCC unroll 16
    for (int t = 0; t < G; ++t) {
      const __m512 v = experts == 16
                           ? _mm512_loadu_ps(rowAt(t))
                           : _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), real, rowAt(t));
      key[t] = Keys::OfRowVector(FiniteForKeys(v), 0);
    }
  }

  // The best KK + 1 keys of every lane, best first.
  // kPairs: lanes hold rows in RowsOfLanes' order, else lane l row l.
  __m512 best[KK + 1];
  if constexpr (kPairs) {
    static_assert(KK == 2, "rows of 8 two to a vector keep two");
    BestThreeOfRowPairs(key, best);
  } else if constexpr (KK == 1) {
    BestTwoOfRows(key, best[0], best[1]);
  } else {
    GatherRowsToLanes(key);
    // Down a list of KK + 1, from the first key (keys are never -inf).
    best[0] = key[0];
#pragma GCC unroll 3
    for (int s = 1; s <= KK; ++s) best[s] = _mm512_set1_ps(kNegInf);
#pragma GCC unroll 16
    for (int j = 1; j < N; ++j) {
      __m512 v = key[j];
#pragma GCC unroll 3
      for (int s = 0; s <= KK; ++s) {
        const __m512 larger = _mm512_max_ps(best[s], v);
        if (s < KK) v = _mm512_min_ps(best[s], v);
        best[s] = larger;
      }
    }
  }
  const __m512 firstLeftOut = best[KK];

  // As the lane network: NaN, +inf or FLT_MAX at the best, a tie zone at a decision.
  __mmask16 left = Keys::AtFloatMax(best[0]);
  __m512i id[KK];
#pragma GCC unroll 2
  for (int s = 0; s < KK; ++s) {
    // Rows of 8 have no padding experts, whose codes the clamp maps to a real one.
    id[s] = kPairs ? Keys::Ids(best[s])
                   : _mm512_min_epi32(Keys::Ids(best[s]), _mm512_set1_epi32(experts - 1));
  }
  __m512 value[KK];
  if constexpr (kPairs) {
    // From the rows in registers, not memory: lane l's row 2 i + h sits in raw[i] at
    // 8 h + id (i = (l & 3) + 4 (l >> 3), h = (l >> 2) & 1), so a two-source permute of
    // raw[2q] and raw[2q + 1] serves the four lanes whose i is 2q or 2q + 1 (index
    // 16 (l & 1) + 8 h + id). Cheaper than a gather's sixteen loads (E = 8, k = 2). The
    // permutes write over their index vector, each only in its own lanes (VPERMI2PS under
    // a mask keeps the index elsewhere), so the four join with no blends: 4 operations a
    // slot where permutes and blends took 7 (1.45-1.52 -> 1.39-1.48 ns a token with the
    // rows in L1, same outputs).
    const __m512i rowBase =
        _mm512_set_epi32(24, 8, 24, 8, 16, 0, 16, 0, 24, 8, 24, 8, 16, 0, 16, 0);
#pragma GCC unroll 2
    for (int s = 0; s < KK; ++s) {
      __m512i v = _mm512_add_epi32(rowBase, id[s]);
      v = _mm512_castps_si512(_mm512_mask2_permutex2var_ps(raw[0], v, 0x0033, raw[1]));
      v = _mm512_castps_si512(_mm512_mask2_permutex2var_ps(raw[2], v, 0x00CC, raw[3]));
      v = _mm512_castps_si512(_mm512_mask2_permutex2var_ps(raw[4], v, 0x3300, raw[5]));
      value[s] = _mm512_mask2_permutex2var_ps(raw[6], v, 0xCC00, raw[7]);
    }
  } else if constexpr (KK == 2) {
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i rowStart = _mm512_mullo_epi32(_mm512_min_epi32(lane, _mm512_set1_epi32(rows - 1)),
                                                _mm512_set1_epi32(experts));
#pragma GCC unroll 2
    for (int s = 0; s < KK; ++s) {
      value[s] = _mm512_i32gather_ps(_mm512_add_epi32(rowStart, id[s]), x, 4);
    }
  }
  __m512 difference = _mm512_setzero_ps();  // k = 2: the second kept logit minus the first
  if constexpr (KK == 2) difference = _mm512_sub_ps(value[1], value[0]);
  if constexpr (!kProbs) {
    left |= _mm512_cmp_ps_mask(firstLeftOut, Keys::ZoneBottom(best[KK - 1]), _CMP_GE_OQ);
    if constexpr (KK == 2) left |= Keys::SameZone(best[0], best[1]);
  } else {
    // Probabilities mode: the lane network's margins (LaneNetworkGroup says why they
    // suffice), every kept e below (1 - 2^-19) times the one before and every e left out
    // that far below the kk-th, hold when the logits differ by more than 2^-18
    // (e^-2^-18 < 1 - 2^-19 - 2^-22), so they are checked on the logits with no exp: a
    // computed difference below -2^-18 has a real one below -2^-18 (1 - 2^-24). The best
    // left out is bounded by the top of its key's tie zone, and for k = 1, where no value
    // is read (the gate is exp(0) / exp(0) = 1), the best by the bottom of its own.
    // SmallRowsGates checks the last margin, the kk-th p normal.
    const __m512 margin = _mm512_set1_ps(-0x1p-18f);
    __m512 kth;  // at most the kk-th logit
    if constexpr (KK == 1) {
      kth = Keys::ZoneBottom(best[0]);
    } else {
      kth = value[KK - 1];
    }
    left |=
        _mm512_cmp_ps_mask(_mm512_sub_ps(Keys::ZoneTop(firstLeftOut), kth), margin, _CMP_NLT_UQ);
    if constexpr (KK == 2) left |= _mm512_cmp_ps_mask(difference, margin, _CMP_NLT_UQ);
  }

  // Write back: slot s of row t at t * KK + s; for k = 2 the gates come later.
  const uint32_t realRows = (1u << rows) - 1u;
  if constexpr (KK == 1) {
    const auto mask = static_cast<__mmask16>(realRows);
    _mm512_mask_storeu_epi32(ids, mask, id[0]);
    _mm512_mask_storeu_ps(gates, mask, _mm512_set1_ps(1.0f));  // exp(0) / exp(0)
  } else {
    StorePairs<kPairs>(rows, ids, id[0], id[1]);
    _mm512_store_ps(differences, difference);
  }
  return RowsOfLanes<kPairs>(left) & realRows;
}

// The gates of SmallRowsGroup's rows for k = 2 from its `differences` (second logit minus
// the first, lane by lane): e = exp(difference), then (0 + 1) + e in rank order and each
// exp over it, as the lane network. A separate pass so that the exp's and the division's
// long chains of one group overlap the next groups' (in one pass the selection's work
// filled the out-of-order window: E = 8, k = 2, 775 -> 935-954 M tokens/s). Returns the rows the
// caller must route: in probabilities mode those whose second p is not normal.
template <bool kPairs, bool kProbs>
HWY_INLINE uint32_t SmallRowsGates(const float* differences, int32_t rows, float* gates) {
  const __m512 e = ExpNonPositive(_mm512_load_ps(differences));
  // The first gate, 1 / sum, is the correctly rounded reciprocal itself.
  const __m512 sum = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
  const __m512 first = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
  // Stored as their bits: the ids' permutes and masked stores serve.
  StorePairs<kPairs>(rows, reinterpret_cast<int32_t*>(gates), _mm512_castps_si512(first),
                     _mm512_castps_si512(DivideWithReciprocal(e, sum, first)));
  if constexpr (!kProbs) return 0;
  // The kk-th p normal: S <= 16, so an e of at least 2^-116 (as the network).
  const __mmask16 tiny = _mm512_cmp_ps_mask(e, _mm512_set1_ps(0x1p-116f), _CMP_NGE_UQ);
  return RowsOfLanes<kPairs>(tiny) & ((1u << rows) - 1u);
}

#else
#undef MOE_SMALL_ROWS
#define MOE_SMALL_ROWS 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
