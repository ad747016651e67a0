// The family kernel's screen of sigmoid rows (route_family_simd.cpp, AVX-512): the rows
// decided on estimated keys (sigmoid_estimate-inl.h), with the exact sigmoid for the few
// experts that can still be kept, bit for bit as the exact rows decide them. Re-included
// once per Highway target by route_family_simd.cpp, hence the toggle guard.
#if defined(MOE_IMPL_FAMILY_SCREEN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_SCREEN_INL_H_
#undef MOE_IMPL_FAMILY_SCREEN_INL_H_
#else
#define MOE_IMPL_FAMILY_SCREEN_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <limits>

#include "family_gates-inl.h"
#include "family_groups-inl.h"
#include "family_scores-inl.h"
#include "family_select.hpp"
#include "family_setup-inl.h"
#include "lane_network-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "sigmoid_estimate-inl.h"
#include "simd_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

#if MOE_FAMILY_SCREEN
// Sigmoid rows decided on estimated keys (sigmoid_estimate-inl.h), exactly as the kernel's
// own keys decide them: the estimate is within delta of each key, so
//   - the kept groups are the estimate's when its smallest kept group score exceeds its
//     largest other by more than 8 delta (a group score, max or top-2 sum, moves by at most
//     2 delta and its sum's rounding, less than delta more);
//   - every expert the keys keep has an estimated key within 2 delta of the kk-th
//     estimated (kk estimated keys reach it, so the kk-th key is at most delta below it).
// Those candidates (kk and the near-ties, at most a vector) get the exact sigmoid and keys
// and are ranked as SelectFast ranks. The result is the exact rows' bit for bit; a row
// the screen cannot decide (a NaN estimate, groups too close to call, too many
// candidates) goes to them. Rows go in blocks, step by step, as Rows does; E is a
// multiple of 16 and the eligible experts whole vectors.
struct Screened {
  bool ok;
  int32_t blocks;                   // eligible vectors
  int32_t blockStart[kMaxVectors];  // the first expert of each
  float threshold;                  // candidates: estimated keys at or above it
  int32_t found;                    // how many
  uint64_t nonEmpty;                // the vectors that hold some
  int32_t pieceStart[kMaxVectors];  // where each vector's candidates go among them
  float floor;                      // a value kk estimated keys reach, or NaN
};

// Each of the first `count` lanes of `keys` (in index order) ranked by how many of them beat
// it: a greater key, or an equal key in an earlier lane. Lanes from count on are not
// ranked.
HWY_INLINE __m512i RankLanesInIndexOrder(__m512 keys, int32_t count) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512i rank = _mm512_setzero_si512();
  for (int32_t j = 0; j < count; ++j) {
    const __m512 other = _mm512_permutexvar_ps(_mm512_set1_epi32(j), keys);
    const __mmask16 later = _mm512_cmpgt_epi32_mask(lane, _mm512_set1_epi32(j));
    const __mmask16 beats = _mm512_cmp_ps_mask(other, keys, _CMP_GT_OQ) |
                            (later & _mm512_cmp_ps_mask(other, keys, _CMP_EQ_OQ));
    rank = _mm512_mask_add_epi32(rank, beats, rank, _mm512_set1_epi32(1));
  }
  return rank;
}

// The estimated keys of experts [b, b + 16) into est, as the token-parallel kernel
// estimates them.
HWY_INLINE __m512 EstimateBlock(const FamilyParams& p, const float* x, int32_t b, float* est) {
  __m512 c = SigmoidEstimate(_mm512_loadu_ps(x + b));
  if (p.bias != nullptr) c = _mm512_add_ps(c, _mm512_loadu_ps(p.bias + b));
  _mm512_storeu_ps(est + b, c);
  return c;
}

// Step 1: the estimated keys into scratch.keys; false on a NaN. Also prefetches the row
// `ahead` floats on (the rows of the next block).
HWY_INLINE bool EstimateKeys(const FamilyParams& p, const float* x, size_t ahead,
                             FamilyScratch& scratch) {
  float* est = scratch.keys.data();
  // The estimates summed: NaN exactly when one is (each is finite or NaN, |c| < 1 + 2^15,
  // so the sum of at most 1024 cannot overflow).
  __m512 sum = _mm512_setzero_ps();
  for (int32_t b = 0; b < p.experts; b += 16) {
    PrefetchRowLine(x, (ahead + size_t(b)) * sizeof(float));
    sum = _mm512_add_ps(sum, EstimateBlock(p, x, b, est));
  }
  return _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) == 0;
}

// Steps 1 and 2 for a row whose kept groups are known (bit g: group g; the token-parallel
// kernel's, lane_family-inl.h, which are the exact ones) with `floor`, a value that kk
// eligible estimated keys reach: the estimated keys of the kept groups only, and their
// vectors. False on a NaN.
HWY_INLINE bool ScreenKnownGroups(const FamilyParams& p, const RowsSetup& setup, const float* x,
                                  uint32_t keptGroups, float floor, FamilyScratch& scratch,
                                  Screened& r) {
  float* est = scratch.keys.data();
  __m512 sum = _mm512_setzero_ps();
  r.blocks = 0;
  for (; keptGroups != 0; keptGroups &= keptGroups - 1) {
    const int32_t start = __builtin_ctz(keptGroups) * setup.size;
    for (int32_t b = start; b < start + setup.size; b += 16) {
      sum = _mm512_add_ps(sum, EstimateBlock(p, x, b, est));
      r.blockStart[r.blocks++] = b;
    }
  }
  r.floor = floor;
  return _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) == 0;
}

// The eligible estimated keys at or above t: their count, and where each vector's go.
HWY_INLINE int32_t CountScreened(const float* est, float t, Screened& r) {
  const __m512 vt = _mm512_set1_ps(t);
  int32_t at = 0;
  uint64_t nonEmpty = 0;
  for (int32_t i = 0; i < r.blocks; ++i) {
    const __mmask16 pass =
        _mm512_cmp_ps_mask(_mm512_loadu_ps(est + r.blockStart[i]), vt, _CMP_GE_OQ);
    r.pieceStart[i] = at;
    at += _mm_popcnt_u32(pass);
    nonEmpty |= uint64_t{pass != 0} << i;
  }
  r.threshold = t;
  r.found = at;
  r.nonEmpty = nonEmpty;
  return at;
}

// Step 2: the kept groups, when the estimate decides them (else false), and the eligible
// vectors.
HWY_INLINE bool ScreenGroups(const FamilyParams& p, const RowsSetup& setup, FamilyScratch& scratch,
                             Screened& r) {
  const float* est = scratch.keys.data();
  float floor = std::numeric_limits<float>::quiet_NaN();
  if (p.groups > 1) {
    // The group scores and seconds (lane g: group g) of the estimated keys, kept in
    // registers; each group ranked by the groups that beat it, as KeepGroupsVector ranks
    // them.
    const GroupLanes lanes = GroupScoreLanes(p, *setup.network, est, setup.size);
    const auto valid = static_cast<__mmask16>((1u << p.groups) - 1);
    const __m512 gs = _mm512_mask_mov_ps(_mm512_set1_ps(kNegInf), valid, lanes.score);
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i rank = RankLanesInIndexOrder(gs, p.groups);
    // The kept groups' smallest score (rank topk - 1) against the others' largest (rank
    // topk; none when every group is kept).
    const __mmask16 kept = valid & _mm512_cmplt_epi32_mask(rank, _mm512_set1_epi32(p.topkGroups));
    const float minKept = _mm512_cvtss_f32(_mm512_maskz_compress_ps(
        _mm512_cmpeq_epi32_mask(rank, _mm512_set1_epi32(p.topkGroups - 1)), gs));
    const float maxOther =
        p.topkGroups < p.groups
            ? _mm512_cvtss_f32(_mm512_maskz_compress_ps(
                  _mm512_cmpeq_epi32_mask(rank, _mm512_set1_epi32(p.topkGroups)), gs))
            : kNegInf;
    if (!(minKept - maxOther > 8 * setup.delta)) return false;
    HWY_ALIGN int32_t keptList[16];
    _mm512_store_si512(keptList, _mm512_maskz_compress_epi32(kept, lane));
    const int32_t perGroup = setup.size / 16;
    r.blocks = 0;
    for (int32_t j = 0; j < p.topkGroups; ++j) {
      for (int32_t b = 0; b < perGroup; ++b) {
        r.blockStart[r.blocks++] = keptList[j] * setup.size + 16 * b;
      }
    }
    // Two estimated keys of each kept group reach its second: a threshold when that
    // makes kk.
    if (2 * p.topkGroups >= setup.kk) floor = _mm512_mask_reduce_min_ps(kept, lanes.second);
  } else {
    r.blocks = p.experts / 16;
    for (int32_t i = 0; i < r.blocks; ++i) r.blockStart[i] = 16 * i;
  }
  r.floor = floor;
  return true;
}

// Step 3: the candidates' threshold and count; false when more than a vector's worth.
HWY_INLINE bool ScreenCount(D d, const RowsSetup& setup, const FamilyScratch& scratch,
                            Screened& r) {
  const float* est = scratch.keys.data();
  const float margin = 2 * setup.delta;
  if (r.floor == r.floor && CountScreened(est, r.floor - margin, r) <= 16) return true;
  __m512 laneMax = _mm512_set1_ps(kNegInf);
  for (int32_t i = 0; i < r.blocks; ++i) {
    laneMax = _mm512_max_ps(laneMax, _mm512_loadu_ps(est + r.blockStart[i]));
  }
  const float t = setup.kk == 1 ? _mm512_reduce_max_ps(laneMax)
                                : KthLargestLane(d, V{laneMax}, setup.kk, setup.rot);
  return CountScreened(est, t - margin, r) <= 16;
}

// Step 4: the candidates' experts in index order in lanes [0, found), each vector's
// compressed and moved up to its place (up to 8 eligible vectors, those without
// candidates too: a branch on it is mispredicted half the time), their logits and biases
// gathered;
// then their exact scores and keys (as ScoresAndKeys computes them), ranked as
// KeepBestCandidates ranks, and the row written as writeFamilyGatesWithTotal writes it.
HWY_INLINE void DecideScreened(D d, const FamilyParams& p, const RowsSetup& setup, const float* x,
                               const FamilyScratch& scratch, const Screened& r, int32_t* rowIds,
                               float* rowGates) {
  const float* est = scratch.keys.data();
  const __m512 vt = _mm512_set1_ps(r.threshold);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512 vx = _mm512_setzero_ps();
  __m512 vb = _mm512_setzero_ps();
  __m512i vid = _mm512_setzero_si512();
  auto collect = [&](int32_t i) __attribute__((always_inline)) {
    const int32_t b = r.blockStart[i];
    const int32_t at = r.pieceStart[i];
    const __mmask16 pass = _mm512_cmp_ps_mask(_mm512_loadu_ps(est + b), vt, _CMP_GE_OQ);
    const __m512i from =
        _mm512_and_si512(_mm512_sub_epi32(lane, _mm512_set1_epi32(at)), _mm512_set1_epi32(15));
    const auto place = static_cast<__mmask16>(((1u << _mm_popcnt_u32(pass)) - 1) << at);
    vid = _mm512_mask_permutexvar_epi32(
        vid, place, from,
        _mm512_maskz_compress_epi32(pass, _mm512_add_epi32(lane, _mm512_set1_epi32(b))));
  };
  if (r.blocks <= 8) {
    for (int32_t i = 0; i < r.blocks; ++i) collect(i);
  } else {  // only the vectors with candidates: one mispredicted exit, not many passes
    for (uint64_t m = r.nonEmpty; m != 0; m &= m - 1) collect(__builtin_ctzll(m));
  }
  const auto live = static_cast<__mmask16>((1u << r.found) - 1);
  vx = _mm512_mask_i32gather_ps(vx, live, vid, x, 4);
  if (p.bias != nullptr) vb = _mm512_mask_i32gather_ps(vb, live, vid, p.bias, 4);
  const __m512 sc = Sigmoid(d, V{vx}).raw;
  const __m512 key = _mm512_mask_mov_ps(_mm512_set1_ps(kNegInf), live,
                                        p.bias != nullptr ? _mm512_add_ps(sc, vb) : sc);
  // Lanes past found (keys -inf) rank found or more.
  WriteRankedRow(p, setup.kk, RankLanesInIndexOrder(key, r.found), sc, vid, rowIds, rowGates);
}
#endif

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
