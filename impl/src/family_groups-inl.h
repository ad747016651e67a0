// The family kernel's group step (route_family_simd.cpp): each group's score, the max or
// the top-2 sum of its keys, by lane-wise reductions or (AVX-512, up to 16 groups of whole
// vectors) a merging network that also yields each group's second key; and the kept
// groups, ranked in one vector. Re-included once per Highway target by
// route_family_simd.cpp, hence the toggle guard.
#if defined(MOE_IMPL_FAMILY_GROUPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_GROUPS_INL_H_
#undef MOE_IMPL_FAMILY_GROUPS_INL_H_
#else
#define MOE_IMPL_FAMILY_GROUPS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "family_select.hpp"
#include "moe/detail/route_kernels.hpp"
#include "simd_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

// Group scores of groups made of whole vectors (no NaN key): the lane-wise best and
// second of each lane, then across lanes. The top-2 sum's value depends only on the two
// values, not on which expert holds them; (0 + best) + second as the spec sums.
HWY_INLINE void GroupScoresAligned(D d, const FamilyParams& p, FamilyScratch& scratch) {
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  const int32_t size = p.groupSize();
  const float* c = scratch.keys.data();
  for (int32_t g = 0; g < p.groups; ++g) {
    const float* cg = c + int64_t{g} * size;
    V m1 = hn::LoadU(d, cg);
    V m2 = hn::Set(d, kNegInf);
    for (int32_t b = lanes; b < size; b += lanes) {
      const V x = hn::LoadU(d, cg + b);
      m2 = hn::Max(m2, hn::Min(m1, x));
      m1 = hn::Max(m1, x);
    }
    const V best = hn::MaxOfLanes(d, m1);
    if (!p.top2Sum) {
      // Max is exact whatever the order; -0 and +0 compare equal, as in beats.
      scratch.groupScore[g] = hn::GetLane(best);
      continue;
    }
    const auto atBest = hn::Eq(m1, best);
    V second;
    if (hn::CountTrue(d, atBest) >= 2) {
      second = best;
    } else {
      second = hn::Max(hn::MaxOfLanes(d, m2),
                       hn::MaxOfLanes(d, hn::IfThenElse(atBest, hn::Set(d, kNegInf), m1)));
    }
    scratch.groupScore[g] = (0.0f + hn::GetLane(best)) + hn::GetLane(second);
  }
}

// The kept groups in index order into scratch.keptGroups, for G <= lanes (no NaN group
// score): each group ranked by the groups that beat it (RankInIndexOrder).
HWY_INLINE void KeepGroupsVector(D d, const FamilyParams& p, FamilyScratch& scratch) {
  const hn::RebindToSigned<D> di;
  const float* g = scratch.groupScore.data();  // room for a whole vector
  const auto rank = RankInIndexOrder(d, LoadFirst(d, g, p.groups), g, p.groups);
  const auto lane = hn::Iota(di, 0);
  const auto kept = hn::And(hn::Lt(rank, hn::Set(di, p.topkGroups)),
                            hn::FirstN(di, static_cast<size_t>(p.groups)));
  HWY_ALIGN int32_t list[kMaxLanes];
  hn::Store(hn::Compress(lane, kept), di, list);
  for (int32_t j = 0; j < p.topkGroups; ++j) scratch.keptGroups[j] = list[j];  // no memmove call
}

#undef MOE_GROUP_NETWORK
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define MOE_GROUP_NETWORK 1
// Up to 16 groups of whole 16-lane vectors at once: each group's lane-wise best and second
// (m1, m2), then four levels that each halve every group's width by merging the two
// halves of two vectors' groups into one vector (128-bit blocks, then lanes), so that after
// the last level each lane holds one group's best and second. A vector without a partner
// is merged with itself. Which lane holds which group is found once by running the same
// network on group numbers (GroupNetwork's constructor).
struct Top2 {
  __m512 m1, m2;
};

template <bool kTags>
HWY_INLINE Top2 MergeTop2(Top2 p, Top2 q) {
  if constexpr (kTags) {
    return p;  // p and q hold the same groups lane by lane
  } else {
    return {_mm512_max_ps(p.m1, q.m1),
            _mm512_max_ps(_mm512_min_ps(p.m1, q.m1), _mm512_max_ps(p.m2, q.m2))};
  }
}

template <int kLevel, bool kTags>
HWY_INLINE Top2 HalveWidth(Top2 a, Top2 b) {
  auto lo = [](__m512 x, __m512 y) {
    if constexpr (kLevel == 0) return _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0));
    if constexpr (kLevel == 1) return _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0));
    if constexpr (kLevel == 2) return _mm512_shuffle_ps(x, y, _MM_SHUFFLE(1, 0, 1, 0));
    if constexpr (kLevel == 3) return _mm512_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0));
  };
  auto hi = [](__m512 x, __m512 y) {
    if constexpr (kLevel == 0) return _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2));
    if constexpr (kLevel == 1) return _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1));
    if constexpr (kLevel == 2) return _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 2, 3, 2));
    if constexpr (kLevel == 3) return _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1));
  };
  const Top2 p{lo(a.m1, b.m1), kTags ? a.m2 : lo(a.m2, b.m2)};
  const Top2 q{hi(a.m1, b.m1), kTags ? a.m2 : hi(a.m2, b.m2)};
  return MergeTop2<kTags>(p, q);
}

template <int kLevel, bool kTags>
HWY_INLINE int32_t HalveAll(Top2* v, int32_t count) {
  const int32_t out = (count + 1) / 2;
  for (int32_t i = 0; i < out; ++i) {
    const int32_t j = 2 * i + 1 < count ? 2 * i + 1 : 2 * i;
    v[i] = HalveWidth<kLevel, kTags>(v[2 * i], v[j]);
  }
  return out;
}

template <bool kTags>
HWY_INLINE Top2 ReduceGroups(Top2* v, int32_t groups) {
  int32_t count = HalveAll<0, kTags>(v, groups);
  count = HalveAll<1, kTags>(v, count);
  count = HalveAll<2, kTags>(v, count);
  HalveAll<3, kTags>(v, count);
  return v[0];
}

struct GroupNetwork {
  HWY_ALIGN int32_t laneOf[16] = {};  // a lane that holds group g at the end
  explicit GroupNetwork(int32_t groups) {
    Top2 v[16];
    for (int32_t g = 0; g < groups; ++g) v[g] = {_mm512_set1_ps(float(g)), _mm512_setzero_ps()};
    HWY_ALIGN float tags[16];
    _mm512_store_ps(tags, ReduceGroups<true>(v, groups).m1);
    for (int32_t lane = 15; lane >= 0; --lane) laneOf[static_cast<int32_t>(tags[lane])] = lane;
  }
};

// Each group's score and second key in lane g (lanes past G hold nothing meaningful), from
// the keys `c` of G <= 16 groups of `size` keys, whole vectors, no NaN: for the exact rows
// (GroupScoresNetwork) and the screened ones (ScreenGroups) alike.
struct GroupLanes {
  __m512 score, second;
};

HWY_INLINE GroupLanes GroupScoreLanes(const FamilyParams& p, const GroupNetwork& net,
                                      const float* c, int32_t size) {
  Top2 v[16];
  for (int32_t g = 0; g < p.groups; ++g) {
    const float* cg = c + int64_t{g} * size;
    __m512 m1 = _mm512_loadu_ps(cg);
    __m512 m2 = _mm512_set1_ps(kNegInf);
    for (int32_t b = 16; b < size; b += 16) {
      const __m512 x = _mm512_loadu_ps(cg + b);
      m2 = _mm512_max_ps(m2, _mm512_min_ps(m1, x));
      m1 = _mm512_max_ps(m1, x);
    }
    v[g] = {m1, m2};
  }
  const Top2 r = ReduceGroups<false>(v, p.groups);
  // (0 + best) + second, as the spec sums; the max is the best alone.
  const __m512 score =
      p.top2Sum ? _mm512_add_ps(_mm512_add_ps(_mm512_setzero_ps(), r.m1), r.m2) : r.m1;
  const __m512i order = _mm512_load_si512(net.laneOf);
  return {_mm512_permutexvar_ps(order, score), _mm512_permutexvar_ps(order, r.m2)};
}

// Group scores for G <= 16 groups of whole vectors (no NaN key), as GroupScoresAligned.
HWY_INLINE void GroupScoresNetwork(const FamilyParams& p, const GroupNetwork& net,
                                   FamilyScratch& scratch) {
  const GroupLanes lanes = GroupScoreLanes(p, net, scratch.keys.data(), p.groupSize());
  // Group g's score to lane g, stored whole: KeepGroupsVector reloads it whole (single
  // stores of each would stall that load on store forwarding).
  _mm512_storeu_ps(scratch.groupScore.data(), lanes.score);
  // Each group's second key, for the selection's threshold (SelectAndWrite).
  _mm512_storeu_ps(scratch.groupSecond.data(), lanes.second);
}
#else
#define MOE_GROUP_NETWORK 0
#endif

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
