// Token-parallel moe_route_v2 for sigmoid rows with a bias and groups (DeepSeek-V3: E = 256,
// k = 8, 8 groups of 32, the best 4 by top-2 sum), on AVX-512: the lane network's moves
// and sorting networks (lane_network-inl.h) on keys of the sigmoid estimate
// (sigmoid_estimate-inl.h), then the exact sigmoid for the kept experts only. Re-included
// once per Highway target by route_family_simd.cpp, hence the toggle guard.
//
// Sixteen tokens at a time, one per lane. Per 16-expert block: each row's estimated keys
// c~ = s~ + b (order keys: the expert in the low 8 bits), moved to lanes and sorted to the
// block's best 8; a group's blocks are merged into its best 8 and the best key it drops
// (its best 4, when the kept groups are many enough: LaneFamily::shortLists).
// The group scores come from those lists (the best, or best + second), the kept groups
// from a sort of the group scores, and the kept experts from merging the kept groups'
// lists (others masked to -inf). Both decisions are taken on estimates, so the kernel
// hands the row back to the exact path unless each is clear by a margin that the
// estimates' error cannot cross: |c~ - c| <= delta (the screen's bound) plus the code
// bits' 2^-15 relative; a group score's error is at most twice that plus the sums'
// roundings. The kept experts, and kept groups too close to call, are confirmed on exact
// keys against the best left out's estimate (one error, not two); kept groups closer
// still, against an exact upper bound of the best group left out. With the kept set
// exact, the kept experts' exact sigmoid (the exact path's own function, given as
// `exactSigmoid`), their keys c = s + b, their order by the spec's beats (a sort on
// (c, id)) and the gates (s over the kept s summed in index order, times the scale) are
// the exact path's, bit for bit. Rows with a NaN logit (a NaN estimate, which the network's
// comparisons report by the invalid flag: InvalidFlagScope) and undecided rows go back
// to the caller, with what the kernel found of them (LaneFamilyLeft).
#if defined(MOE_IMPL_LANE_FAMILY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_LANE_FAMILY_INL_H_
#undef MOE_IMPL_LANE_FAMILY_INL_H_
#else
#define MOE_IMPL_LANE_FAMILY_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "invalid_flag.hpp"
#include "lane_network-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "order_keys-inl.h"
#include "sigmoid_estimate-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if MOE_LANE_NETWORK && MOE_SIGMOID_ESTIMATE
#undef MOE_LANE_FAMILY
#define MOE_LANE_FAMILY 1

inline constexpr int32_t kLaneFamilyMaxGroups = 16;

// What the kernel needs of the parameters, and its margins, fixed per call.
struct LaneFamily {
  int32_t experts = 0, k = 0, kk = 0, groups = 1, topkGroups = 1, blocks = 0, groupBlocks = 0;
  int codeBits = 8;  // the expert's code in a key: 8 bits up to 256 experts, else 9
  bool top2 = false, renormalize = false;
  // Groups keep lists of their best 4, not 8, when kk is at most twice topk_groups
  // (DeepSeek-V3: 8 of 4 groups), in the instantiation for E = 256 (LaneFamilyRows; other
  // E keep lists of 8). A row whose kept experts take 5 or more from one group is then
  // handed back (that group's 5th key, the best it drops, beats the kk-th): about 1.2% of
  // the benchmark's rows more, where lists of 4 take a third fewer min/max a block.
  bool shortLists = false;
  float scale = 1.0f;
  const float* bias = nullptr;
  float keyError = 0.0f;      // delta: |c~ - c| at most this
  float expertMargin = 0.0f;  // least kept exact key minus the next estimate: above it, exact
  float groupMargin = 0.0f;   // topk_groups-th group score minus the next: likewise
  // The least kept group's exact lower bound minus the next group score: above it, exact.
  float groupConfirmMargin = 0.0f;

  // delta: the screen's bound on |c~ - c| (0: no screen); maxBias: max |b| over the experts,
  // which the screen computed for delta (0 without a bias). False where the kernel does not
  // apply: softmax, E not whole blocks or past 512 (9-bit codes), k past 8, groups not
  // whole blocks, too few eligible experts for a best left out.
  bool setUp(const FamilyParams& p, float delta, double maxBias) {
    kk = p.keptCount();
    if (!p.sigmoid || !(delta > 0.0f) || p.experts < 32 || p.experts > 512 || p.experts % 16 != 0 ||
        kk < 1 || kk > 8 || p.eligibleCount() <= kk) {
      return false;
    }
    if (p.groups > 1 && (p.groupSize() % 16 != 0 || p.groups > kLaneFamilyMaxGroups)) return false;
    experts = p.experts;
    k = p.k;
    groups = p.groups;
    topkGroups = p.groups > 1 ? p.topkGroups : 1;
    blocks = p.experts / 16;
    groupBlocks = p.groupSize() / 16;
    top2 = p.top2Sum;
    shortLists = groups > 1 && kk <= 2 * topkGroups;
    renormalize = p.renormalize;
    scale = p.scale;
    bias = p.bias;
    // |c| <= 1 + B with B = maxBias. A key replaces the
    // low 8 bits of c~ (9 past 256 experts): within 2^-15 |c~| (2^-14) of it. A group score (0 +
    // c1) + c2 rounds twice, within 2^-23 (1 + B) each, and its group key's 4 code bits move it by
    // 2^-18 (1 + B).
    const double top = 1.0 + maxBias + double(delta);
    codeBits = p.experts <= 256 ? 8 : 9;
    const double perKey = double(delta) + std::ldexp(top, codeBits - 23);
    const double perGroup = 2.0 * perKey + std::ldexp(top, -22) + std::ldexp(2.0 * top, -18);
    // The kept experts' exact keys against the top of the first left out's tie zone, whose
    // exact key is at most delta above it: delta itself, a float, so that a rounded
    // difference above it is a real one above it (rounding is monotone).
    keyError = delta;
    expertMargin = delta;
    // Group scores compared with a rounded difference: a little more than twice the errors.
    groupMargin = static_cast<float>(2.0 * perGroup * (1.0 + 0x1p-20) + std::ldexp(2.0 * top, -22));
    // perGroup rounded up to a float: a rounded difference above it is a real one above it.
    groupConfirmMargin = static_cast<float>(perGroup * (1.0 + 0x1p-20));
    return true;
  }
};

// (key, id, score) triples ranked by the spec's beats: a greater key, or an equal key and
// a lower id, goes first (the padding: key -inf, id past every expert).
struct Ranked {
  __m512 key;
  __m512i id;
  __m512 score;
};

// A group's score from its best and second keys, lane by lane: the top-2 sum as the spec
// sums it, (0 + best) + second, or the best for the max.
HWY_INLINE __m512 GroupScoreOf(const LaneFamily& f, __m512 best, __m512 second) {
  return f.top2 ? _mm512_add_ps(_mm512_add_ps(_mm512_setzero_ps(), best), second) : best;
}

// The lanes where `a` beats `b`.
HWY_INLINE __mmask16 Beats(const Ranked& a, const Ranked& b) {
  return _mm512_cmp_ps_mask(a.key, b.key, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(a.key, b.key, _CMP_EQ_OQ) & _mm512_cmpgt_epi32_mask(b.id, a.id));
}

// Compare-exchange by beats.
HWY_INLINE void ExchangeByBeats(Ranked& a, Ranked& b) {
  const __mmask16 bFirst = Beats(b, a);
  const Ranked oldA = a;
  a.key = _mm512_mask_blend_ps(bFirst, a.key, b.key);
  a.id = _mm512_mask_blend_epi32(bFirst, a.id, b.id);
  a.score = _mm512_mask_blend_ps(bFirst, a.score, b.score);
  b.key = _mm512_mask_blend_ps(bFirst, b.key, oldA.key);
  b.id = _mm512_mask_blend_epi32(bFirst, b.id, oldA.id);
  b.score = _mm512_mask_blend_ps(bFirst, b.score, oldA.score);
}

// Compare-exchange by id, lower first, carrying the score.
HWY_INLINE void ExchangeById(__m512i& idA, __m512& sA, __m512i& idB, __m512& sB) {
  const __mmask16 swap = _mm512_cmpgt_epi32_mask(idA, idB);
  const __m512i lowId = _mm512_min_epi32(idA, idB);
  idB = _mm512_max_epi32(idA, idB);
  idA = lowId;
  const __m512 oldA = sA;
  sA = _mm512_mask_blend_ps(swap, sA, sB);
  sB = _mm512_mask_blend_ps(swap, sB, oldA);
}

// What a group of rows hands back to the exact path, and what it knows of them.
struct LaneFamilyLeft {
  uint32_t rows = 0;  // bit i: lane i's row
  // Among them, the rows whose kept groups are unknown: a NaN logit, or the groups too
  // close to call, which the per-token screen's wider group margin cannot decide either.
  uint32_t groupsUnknown = 0;
  // For the others the kept groups are the exact ones (bit i of keptGroup[g]: row i keeps
  // group g), and floor[i] a value that kk eligible estimated keys reach (the bottom of
  // the kk-th key's tie zone), the per-token screen's threshold.
  __mmask16 keptGroup[kLaneFamilyMaxGroups];
  HWY_ALIGN float floor[16];
  // Whether the invalid flag may be raised now (a NaN key, or rows handed back): the
  // caller clears it before the next group (InvalidFlagScope::Clear).
  bool invalidRaised = false;
};

// Routes `rows` (<= 16) rows, lane t on row t * kStep of `x` (ForEachLaneGroup); what it
// hands back goes to `handedBack`.
// lists: room for 8 vectors a group, of which a group's list takes kList (8, or 4 with
// LaneFamily::shortLists); drops: one a group. kExperts: E when it is known here (16 rows
// of it: every load at a constant offset, as the lane network's kFull, where computing 16
// row addresses a block was a fifth of the instructions), else 0.
template <int kExperts, int kCodeBits, int kStep, int kList, class ExactSigmoid>
HWY_INLINE void LaneFamilyGroup(const LaneFamily& f, const float* x, int32_t rows, int32_t* ids,
                                float* gates, ExactSigmoid exactSigmoid, __m512* lists,
                                __m512* drops, LaneFamilyLeft& handedBack) {
  using Keys = OrderKeys<kCodeBits>;
  using GroupKeys = OrderKeys<4>;
  constexpr int G = kNetworkGroup;
  if constexpr (kExperts != 0) rows = G;
  const int32_t n = kExperts != 0 ? kExperts : f.experts;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int kListShift = std::countr_zero(16u * kList);  // floats a group's list takes, log 2
  const auto rowAt = [&](int t) { return x + int64_t{std::min(t, rows - 1)} * kStep * n; };

  // Every group's best kList estimated keys (sorted) and the best key it drops.
  // No bias adds +0: an estimate is never -0, so that changes no key. An estimate is in
  // [0, 1] or a NaN, and a bias finite (the screen is off otherwise), so a key is a finite
  // number or a NaN, which the invalid flag reports after the loop.
  for (int32_t b = 0, g = 0, inGroup = 0; b < f.blocks; ++b) {
    const __m512 bias = f.bias != nullptr ? _mm512_loadu_ps(f.bias + 16 * b) : _mm512_setzero_ps();
    __m512 block[16];
#pragma GCC unroll 16
    for (int t = 0; t < G; ++t) {
      const float* at = rowAt(t) + 16 * b;
      // The line this lane reads a group later (the network's prefetch).
      PrefetchRowLine(at, NextGroupRowBytes<kStep>(n));
      const __m512 c = _mm512_add_ps(SigmoidEstimate(_mm512_loadu_ps(at)), bias);
      block[t] = Keys::OfRowVector(c, static_cast<int>(b));
    }
    GatherRowsToLanes(block);
    const __m512 dropped = SortBlock<kList>(block);
    __m512* list = lists + kList * g;
    if (inGroup == 0) {
#pragma GCC unroll 8
      for (int s = 0; s < kList; ++s) list[s] = block[s];
      drops[g] = dropped;
    } else {
      drops[g] = _mm512_max_ps(_mm512_max_ps(drops[g], dropped), MergeBest<kList>(list, block));
    }
    if (++inGroup == f.groupBlocks) {
      inGroup = 0;
      ++g;
    }
  }

  // The exact score s of expert `id` of each lane's row, and its key c = s + b (the exact
  // path's).
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i rowStart = _mm512_mullo_epi32(_mm512_min_epi32(lane, _mm512_set1_epi32(rows - 1)),
                                              _mm512_set1_epi32(kStep * n));
  const auto exactScore = [&](__m512i id) {
    return exactSigmoid(_mm512_i32gather_ps(_mm512_add_epi32(rowStart, id), x, 4));
  };
  const auto exactKey = [&](__m512i id, __m512 score) {
    return f.bias != nullptr ? _mm512_add_ps(score, _mm512_i32gather_ps(id, f.bias, 4)) : score;
  };

  // A NaN logit (or one past the estimate's range) makes a NaN key, and the network
  // raises the invalid flag: the rows with one are found again (their estimates summed)
  // and go to the exact path; their lanes' lists, which NaN comparisons left anything in,
  // become keys of real experts (the code of list place s in each group), so that every
  // id read below is one.
  const int32_t groups = f.groups > 1 ? f.groups : 1;
  __mmask16 left = 0;
  if (InvalidFlagScope::Raised()) {
    handedBack.invalidRaised = true;
    for (int t = 0; t < G; ++t) {
      __m512 sum = _mm512_setzero_ps();
      for (int32_t b = 0; b < f.blocks; ++b) {
        sum = _mm512_add_ps(sum, SigmoidEstimate(_mm512_loadu_ps(rowAt(t) + 16 * b)));
      }
      if (_mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) != 0) left |= static_cast<__mmask16>(1u << t);
    }
    const int32_t size = f.experts / groups;
    for (int32_t g = 0; g < groups; ++g) {
      for (int s = 0; s < kList; ++s) {
        const int32_t code = Keys::kCodeMask - (g * size + s);
        lists[kList * g + s] = _mm512_mask_mov_ps(lists[kList * g + s], left,
                                                  _mm512_castsi512_ps(_mm512_set1_epi32(code)));
      }
      drops[g] = _mm512_mask_mov_ps(drops[g], left, _mm512_setzero_ps());
    }
  }
  __mmask16 groupsUnknown = left;

  // The kept groups: group keys (score, code 15 - g) sorted; the topk_groups-th must beat
  // the next by the margin.
  __mmask16* keptGroup = handedBack.keptGroup;
  if (f.groups > 1) {
    __m512 groupKey[16];
    for (int32_t g = 0; g < 16; ++g) {
      if (g >= f.groups) {
        groupKey[g] = _mm512_set1_ps(kNegInf);
        continue;
      }
      const __m512 score = GroupScoreOf(f, lists[kList * g], lists[kList * g + 1]);
      groupKey[g] = SelectBits(_mm512_castps_si512(score), _mm512_set1_epi32(~GroupKeys::kCodeMask),
                               _mm512_set1_epi32(GroupKeys::kCodeMask - g));
    }
    __m512 sorted[16];
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) sorted[g] = groupKey[g];
    if (f.groups <= 8) {
      SortEight(sorted);
    } else {
      SortSixteen(sorted);
    }
    const int32_t t = f.topkGroups;
    if (t < f.groups) {
      __mmask16 close = _mm512_cmp_ps_mask(_mm512_sub_ps(sorted[t - 1], sorted[t]),
                                           _mm512_set1_ps(f.groupMargin), _CMP_NGT_UQ) &
                        ~left;
      if (close != 0) {
        // Too close on estimates: the kept groups are still the exact ones when each one's
        // exact score beats the next group's by that one's error. A kept group's exact
        // score is at least the spec's score of its best two estimated experts' exact keys
        // (at least its best one's for the max), rounding being monotone.
        __m512 leastKept = _mm512_set1_ps(std::numeric_limits<float>::infinity());
        const auto listFloats = reinterpret_cast<const float*>(lists);
        for (int32_t r = 0; r < t; ++r) {
          // Lane l of lists[kList g + s] is float (kList g + s) * 16 + l of the lists.
          const __m512i at =
              _mm512_add_epi32(_mm512_slli_epi32(GroupKeys::Ids(sorted[r]), kListShift), lane);
          const __m512i best0 = Keys::Ids(_mm512_i32gather_ps(at, listFloats, 4));
          const __m512 first = exactKey(best0, exactScore(best0));
          __m512 second = first;  // unread for the max
          if (f.top2) {
            const __m512i best1 = Keys::Ids(
                _mm512_i32gather_ps(_mm512_add_epi32(at, _mm512_set1_epi32(16)), listFloats, 4));
            second = exactKey(best1, exactScore(best1));
          }
          leastKept = _mm512_min_ps(leastKept, GroupScoreOf(f, first, second));
        }
        close &= _mm512_cmp_ps_mask(_mm512_sub_ps(leastKept, sorted[t]),
                                    _mm512_set1_ps(f.groupConfirmMargin), _CMP_NGT_UQ);
        if (close != 0) {
          // Still too close: the best group left out bounded above on exact keys too.
          // Its best two estimated experts' exact keys a >= b, and every other expert's at
          // most U, the top of its third key's tie zone plus delta (its second's for the
          // max), rounded up: its top two are at most (max(a, U), max(b, U)), and its
          // score at most the spec's score of those. The groups after it keep the
          // estimate's bound.
          const __m512i at =
              _mm512_add_epi32(_mm512_slli_epi32(GroupKeys::Ids(sorted[t]), kListShift), lane);
          const auto listed = [&](int s) {
            return _mm512_i32gather_ps(_mm512_add_epi32(at, _mm512_set1_epi32(16 * s)), listFloats,
                                       4);
          };
          const __m512i best0 = Keys::Ids(listed(0));
          __m512 a = exactKey(best0, exactScore(best0));
          __m512 b = a;  // unread for the max
          if (f.top2) {
            const __m512i best1 = Keys::Ids(listed(1));
            b = exactKey(best1, exactScore(best1));
            const __m512 high = _mm512_max_ps(a, b);
            b = _mm512_min_ps(a, b);
            a = high;
          }
          // ZoneTop + delta in float is within half an ulp of the real sum (exact when the
          // two nearly cancel): |u| 2^-20 more covers it.
          const __m512 u =
              _mm512_add_ps(Keys::ZoneTop(listed(f.top2 ? 2 : 1)), _mm512_set1_ps(f.keyError));
          const __m512 bound =
              _mm512_add_ps(u, _mm512_mul_ps(_mm512_abs_ps(u), _mm512_set1_ps(0x1p-20f)));
          const __m512 leftOut = GroupScoreOf(f, _mm512_max_ps(a, bound), _mm512_max_ps(b, bound));
          __mmask16 decided = _mm512_cmp_ps_mask(leastKept, leftOut, _CMP_GT_OQ);
          if (t + 1 < kLaneFamilyMaxGroups) {
            decided &= _mm512_cmp_ps_mask(_mm512_sub_ps(leastKept, sorted[t + 1]),
                                          _mm512_set1_ps(f.groupConfirmMargin), _CMP_GT_OQ);
          }
          close &= ~decided;
        }
      }
      groupsUnknown |= close;
      left |= groupsUnknown;
    }
    // Group keys are distinct (their codes differ), so the kept groups are those whose key
    // is at least the topk_groups-th: one compare a group (a loop over the kept places,
    // or-ing into each group's mask, kept the masks on the stack).
    for (int32_t g = 0; g < f.groups; ++g) {
      keptGroup[g] = _mm512_cmp_ps_mask(groupKey[g], sorted[t - 1], _CMP_GE_OQ);
    }
  } else {
    keptGroup[0] = 0xFFFF;
  }

  // The kept experts: the kept groups' lists merged (the others' keys -inf).
  const auto keptList = [&](int32_t g, int s) {
    return _mm512_mask_mov_ps(_mm512_set1_ps(kNegInf), keptGroup[g], lists[kList * g + s]);
  };
  __m512 key[8];
  __m512 others = _mm512_set1_ps(kNegInf);
  for (int32_t g = 0; g < groups; ++g) {
    others =
        _mm512_max_ps(others, _mm512_mask_mov_ps(_mm512_set1_ps(kNegInf), keptGroup[g], drops[g]));
  }
  if constexpr (kList == 4) {
    // Lists of 4 merged whole in pairs of groups (kMergeFourPairs), then the pairs' lists
    // of 8 as a tree: at DeepSeek-V3's 8 groups 4 x 18 + 3 x 33 min/max, three merges
    // deep, where merging each group's list into the best 8 took 7 x 33, seven deep.
    __m512 merged[kLaneFamilyMaxGroups / 2][8];
    int32_t m = 0;
    for (int32_t g = 0; g < groups; g += 2, ++m) {
      __m512* x = merged[m];
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) {
        x[s] = keptList(g, s);
        x[4 + s] = g + 1 < groups ? keptList(g + 1, s) : _mm512_set1_ps(kNegInf);
      }
#pragma GCC unroll 9
      for (const auto& pair : kMergeFourPairs) Exchange(x[pair[0]], x[pair[1]]);
    }
    for (; m > 1; m = (m + 1) / 2) {
      for (int32_t i = 0; 2 * i < m; ++i) {
        if (2 * i + 1 < m) {
          others = _mm512_max_ps(others, MergeBest<8>(merged[2 * i], merged[2 * i + 1]));
        }
        if (i > 0) {
#pragma GCC unroll 8
          for (int s = 0; s < 8; ++s) merged[i][s] = merged[2 * i][s];
        }
      }
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) key[s] = merged[0][s];
  } else {
    for (int32_t g = 0; g < groups; ++g) {
      __m512 list[8];
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) list[s] = keptList(g, s);
      if (g == 0) {
#pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) key[s] = list[s];
      } else {
        others = _mm512_max_ps(others, MergeBest<8>(key, list));
      }
    }
  }
  const int32_t kk = f.kk;
  const __m512 firstLeftOut = kk < 8 ? key[std::min(kk, 7)] : others;
  _mm512_store_ps(handedBack.floor, Keys::ZoneBottom(key[kk - 1]));

  // The kept experts exactly: logits and biases gathered by id, the exact path's sigmoid,
  // ranked by beats on (c, id) (padding past kk: -inf, an id past every expert).
  Ranked kept[8];
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    if (s >= kk) {
      kept[s] = {_mm512_set1_ps(kNegInf), _mm512_set1_epi32(n + s), _mm512_setzero_ps()};
      continue;
    }
    const __m512i id = Keys::Ids(key[s]);
    const __m512 score = exactScore(id);
    kept[s] = {exactKey(id, score), id, score};
  }
  // The kept set is the exact one when every kept expert's exact key beats every other
  // eligible one's: those lie at most delta above their estimates, which lie at most at
  // the top of the first left out's tie zone.
  __m512 leastKept = kept[0].key;
#pragma GCC unroll 7
  for (int s = 1; s < 8; ++s) {
    if (s < kk) leastKept = _mm512_min_ps(leastKept, kept[s].key);
  }
  left |= _mm512_cmp_ps_mask(_mm512_sub_ps(leastKept, Keys::ZoneTop(firstLeftOut)),
                             _mm512_set1_ps(f.expertMargin), _CMP_NGT_UQ);
  // The estimates' order is the exact one unless two kept keys were within the estimates'
  // error: the network runs only for a group where some lane is out of order. Both sorts
  // are unrolled, as SortEight, so that the lists stay in registers.
  __mmask16 outOfOrder = 0;
#pragma GCC unroll 7
  for (int s = 0; s + 1 < 8; ++s) outOfOrder |= Beats(kept[s + 1], kept[s]);
  if (outOfOrder != 0) {
#pragma GCC unroll 19
    for (const auto& pair : kSortEightPairs) ExchangeByBeats(kept[pair[0]], kept[pair[1]]);
  }

  // Gates: s, over the kept s summed in index order from 0 when renormalising, times scale.
  __m512 gate[8];
  if (f.renormalize) {
    __m512i byId[8];
    __m512 sById[8];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      byId[s] = kept[s].id;
      sById[s] = kept[s].score;
    }
#pragma GCC unroll 19
    for (const auto& pair : kSortEightPairs) {
      ExchangeById(byId[pair[0]], sById[pair[0]], byId[pair[1]], sById[pair[1]]);
    }
    __m512 total = _mm512_setzero_ps();
    for (int32_t s = 0; s < kk; ++s) total = _mm512_add_ps(total, sById[s]);
    // One division for 1 / total and the quotients from it (DivideWithReciprocal), the
    // division's own when operands and quotients are normal: with every kept s at least
    // 2^-100 (s / total at least 2^-103); else the divisions.
    __m512 least = sById[0];
    for (int32_t s = 1; s < kk; ++s) least = _mm512_min_ps(least, sById[s]);
    if (_mm512_cmp_ps_mask(least, _mm512_set1_ps(0x1p-100f), _CMP_NLT_UQ) == 0xFFFF) {
      const __m512 inverse = _mm512_div_ps(_mm512_set1_ps(1.0f), total);
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        gate[s] = _mm512_mul_ps(DivideWithReciprocal(kept[s].score, total, inverse),
                                _mm512_set1_ps(f.scale));
      }
    } else {
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        gate[s] = _mm512_mul_ps(_mm512_div_ps(kept[s].score, total), _mm512_set1_ps(f.scale));
      }
    }
  } else {
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) gate[s] = _mm512_mul_ps(kept[s].score, _mm512_set1_ps(f.scale));
  }

  // Back to rows as the lane network: row t's gates in lanes 0..7, its ids in 8..15.
  __m512 out[16];
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    out[s] = s < kk ? gate[s] : _mm512_setzero_ps();
    out[8 + s] = s < kk ? _mm512_castsi512_ps(kept[s].id) : _mm512_setzero_ps();
  }
  Transpose16(out);
  for (int32_t t = 0; t < rows; ++t) {
    if ((left >> t) & 1) continue;
    StoreKept(f.k, kk,
              _mm512_castsi256_si512(_mm512_extracti32x8_epi32(_mm512_castps_si512(out[t]), 1)),
              out[t], ids + int64_t{t} * kStep * f.k, gates + int64_t{t} * kStep * f.k);
  }
  const uint32_t real = (1u << rows) - 1u;
  handedBack.rows = left & real;
  handedBack.groupsUnknown = groupsUnknown & real;
}

#else
#undef MOE_LANE_FAMILY
#define MOE_LANE_FAMILY 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
