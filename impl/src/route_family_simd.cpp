// The vectorised moe_route_v2 (Highway, every x86 target; called by name or by dynamic
// dispatch). Per token: the scores and keys in one vector pass (sigmoid or softmax, with
// the AVX-512 kernels' own exp where there is one, and a correctly rounded division); the
// group scores of groups made of whole vectors by a merging network (AVX-512, up to 16
// groups) or lane-wise reductions; the kept groups ranked in one vector; the kept experts
// by a threshold that at least k eligible keys reach (the kept groups' second keys, or the
// k-th largest lane maximum), ranking only the keys at or above it; the gates as
// family_select.hpp writes them. Every decision applies the spec's comparisons and tie
// rule to this kernel's binary32 keys and group scores (which differ from the spec's only
// through the exp, and for softmax the order of its sum); rows that do not fit the fast
// paths (unaligned groups, more candidates than a vector, k past half a vector) take the
// scalar steps, which decide as the spec does. Tokens go four at a time, step by step.
// On AVX-512, sigmoid rows of E >= 32 are first screened with a cheap estimate of the
// sigmoid: only the experts that can still be kept get the exact one (DecideScreened),
// and the result is the same bit for bit.
// Orders of summation depend only on the parameters and the target, so a token's result
// is bitwise independent of its batch.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "route_family_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target, before highway.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "family_select.hpp"
#include "fast_exp-inl.h"
#include "lane_family-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "sigmoid_estimate-inl.h"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace family {

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// The largest float whose expf is finite: below -kExpFinite, the spec's sigmoid
// 1 / (1 + exp(-x)) is 1 / inf = 0.
constexpr float kExpFinite = 0x1.62e42ep6f;  // 88.72283172607421875

// Elements [b, b + lanes) of an array of n floats, -inf past n (never wins, neutral for
// max, exp(-inf) = 0).
HWY_INLINE V LoadBlock(D d, const float* row, int32_t b, int32_t n) {
  const size_t lanes = hn::Lanes(d);
  if (static_cast<size_t>(n - b) >= lanes) return hn::LoadU(d, row + b);
  HWY_ALIGN float buf[kMaxLanes];
  for (size_t i = 0; i < lanes; ++i) buf[i] = kNegInf;
  std::memcpy(buf, row + b, static_cast<size_t>(n - b) * sizeof(float));
  return hn::Load(d, buf);
}

// exp(x) for x <= 0 (and -inf: 0, NaN: NaN): fast_exp-inl.h on AVX-512, else Highway's.
HWY_INLINE V ExpNonPositive(D d, V x) {
#if MOE_FAST_EXP
  (void)d;
  return V{moe::detail::HWY_NAMESPACE::ExpNonPositive(x.raw)};
#else
  return hn::Exp(d, x);
#endif
}

// sigmoid(x) = 1 / (1 + exp(-x)) through t = exp(-|x|) <= 1, so the exp never overflows:
// 1 / (1 + t) for x >= 0, t / (1 + t) below; 0 below -88.72 as the spec's binary32
// (whose exp(-x) overflows there). NaN stays NaN. VDIVPS, correctly rounded: a reciprocal
// with a Newton step and a correction measured no faster on Zen 4.
HWY_INLINE V Sigmoid(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V t = ExpNonPositive(d, hn::Neg(hn::Abs(x)));
  const V s = hn::Div(hn::IfThenElse(hn::Ge(x, hn::Zero(d)), one, t), hn::Add(one, t));
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -kExpFinite)), s);
}

// Scores into scratch.scores and keys into scratch.keys (both padded to whole vectors).
// Returns false when a key is NaN (or softmax's max is not finite: every score NaN).
HWY_INLINE bool ScoresAndKeys(D d, const FamilyParams& p, const float* x, FamilyScratch& scratch) {
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  const int32_t n = p.experts;
  float* s = scratch.scores.data();
  float* c = scratch.keys.data();
  auto nanLanes = hn::FirstN(d, 0);
  if (p.sigmoid) {
    for (int32_t b = 0; b < n; b += lanes) {
      const V xb = LoadBlock(d, x, b, n);
      const V sb = Sigmoid(d, xb);
#if !MOE_FAST_EXP
      // Highway's Exp clamps its argument with a min that drops a NaN: look at the logit.
      nanLanes = hn::Or(nanLanes, hn::IsNaN(xb));
#endif
      hn::StoreU(sb, d, s + b);
      const V cb = p.bias != nullptr ? hn::Add(sb, LoadBlock(d, p.bias, b, n)) : sb;
      hn::StoreU(cb, d, c + b);
      nanLanes = hn::Or(nanLanes, hn::IsNaN(cb));
    }
    return hn::AllFalse(d, nanLanes);
  }
  V vmax = hn::Set(d, kNegInf);
  for (int32_t b = 0; b < n; b += lanes) {
    const V xb = LoadBlock(d, x, b, n);
    vmax = hn::Max(vmax, xb);
    nanLanes = hn::Or(nanLanes, hn::IsNaN(xb));
  }
  const float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  if (!hn::AllFalse(d, nanLanes) || !std::isfinite(m)) return false;
  const V vm = hn::Set(d, m);
  V acc = hn::Zero(d);
  for (int32_t b = 0; b < n; b += lanes) {
    const V e = ExpNonPositive(d, hn::Sub(LoadBlock(d, x, b, n), vm));
    hn::StoreU(e, d, s + b);
    acc = hn::Add(acc, e);
  }
  const V sum = hn::SumOfLanes(d, acc);  // lane-wise: a fixed order for a given E
  for (int32_t b = 0; b < n; b += lanes) {
    const V sb = hn::Div(hn::LoadU(d, s + b), sum);
    hn::StoreU(sb, d, s + b);
    const V cb = p.bias != nullptr ? hn::Add(sb, LoadBlock(d, p.bias, b, n)) : sb;
    hn::StoreU(cb, d, c + b);
    nanLanes = hn::Or(nanLanes, hn::IsNaN(cb));
  }
  return hn::AllFalse(d, nanLanes);
}

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

// This file is compiled once per Highway target (foreach_target.h): one definition each.
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

// The screened sigmoid rows (EstimateKeys, ScreenCandidates, DecideScreened) need the
// estimate and the group network.
#undef MOE_FAMILY_SCREEN
#if MOE_SIGMOID_ESTIMATE && MOE_GROUP_NETWORK
#define MOE_FAMILY_SCREEN 1
#else
#define MOE_FAMILY_SCREEN 0
#endif

// rotations[r * lanes + i] = (i + r) mod lanes: lane i meets lane i + r.
struct Rotations {
  HWY_ALIGN int32_t lanes[kMaxLanes * kMaxLanes];
  explicit Rotations(size_t n) {
    for (size_t r = 0; r < n; ++r) {
      for (size_t i = 0; i < n; ++i) lanes[r * n + i] = static_cast<int32_t>((i + r) % n);
    }
  }
};

// The kk-th largest lane of m: the smallest lane that fewer than kk lanes exceed (each
// lane meets every other by a rotation: lanes - 1 permutes and compares).
HWY_INLINE float KthLargestLane(D d, V m, int32_t kk, const Rotations& rot) {
  const hn::RebindToSigned<D> di;
  const size_t lanes = hn::Lanes(d);
  auto greater = hn::Zero(di);
  for (size_t r = 1; r < lanes; ++r) {
    const V other = hn::TableLookupLanes(m, hn::SetTableIndices(d, rot.lanes + r * lanes));
    greater = hn::Sub(greater, hn::VecFromMask(di, hn::RebindMask(di, hn::Gt(other, m))));
  }
  const auto inTop = hn::RebindMask(d, hn::Lt(greater, hn::Set(di, kk)));
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  return hn::GetLane(hn::MinOfLanes(d, hn::IfThenElse(inTop, m, inf)));
}

// The kept groups in index order into scratch.keptGroups, for G <= lanes (no NaN group
// score): rank each group by counting the groups that beat it, as RankCandidates.
HWY_INLINE void KeepGroupsVector(D d, const FamilyParams& p, FamilyScratch& scratch) {
  const hn::RebindToSigned<D> di;
  const float* g = scratch.groupScore.data();  // room for a whole vector
  const V v = hn::IfThenElse(hn::FirstN(d, static_cast<size_t>(p.groups)), hn::LoadU(d, g),
                             hn::Set(d, kNegInf));
  const auto lane = hn::Iota(di, 0);
  auto rank = hn::Zero(di);
  for (int32_t j = 0; j < p.groups; ++j) {
    const V other = hn::Set(d, g[j]);
    const auto later = hn::RebindMask(d, hn::Gt(lane, hn::Set(di, j)));
    const auto beats = hn::Or(hn::Gt(other, v), hn::And(later, hn::Eq(other, v)));
    rank = hn::Sub(rank, hn::VecFromMask(di, hn::RebindMask(di, beats)));
  }
  const auto kept = hn::And(hn::Lt(rank, hn::Set(di, p.topkGroups)),
                            hn::FirstN(di, static_cast<size_t>(p.groups)));
  HWY_ALIGN int32_t list[kMaxLanes];
  hn::Store(hn::Compress(lane, kept), di, list);
  for (int32_t j = 0; j < p.topkGroups; ++j) scratch.keptGroups[j] = list[j];  // no memmove call
}

// The most vectors a row's eligible experts may span for the fast selections (E <= 1024).
constexpr int32_t kMaxVectors = 64;

// Fast selection of the kk best keys among the eligible experts, whose vectors start at
// starts[0..count) (each `span` long, the last clipped to n): every kept key is >= T, a
// value that at least kk eligible keys reach, so only keys >= T are ranked (typically
// ~kk + 2). T is `floor` when given (not NaN) and few enough keys pass it, else the kk-th
// largest lane maximum. Writes keptIds/keptKeys best first; false when more than one
// vector's worth pass T.
HWY_INLINE bool SelectFast(D d, const float* c, int32_t n, const int32_t* starts, int32_t count,
                           int32_t span, int32_t kk, const Rotations& rot, float floor,
                           const float* s, int32_t* keptIds, float* keptKeys, float* keptTotal) {
  const hn::RebindToSigned<D> di;
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  const auto lane = hn::Iota(di, 0);
  auto laneMaxOf = [&] {
    V laneMax = hn::Set(d, kNegInf);
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        laneMax = hn::Max(laneMax, LoadBlock(d, c, b, n));
      }
    }
    return laneMax;
  };
  if (kk == 1) {
    // The argmax: the first eligible key equal to the largest (exact ties to the lower
    // index), its score the whole renormalising sum.
    const V best = hn::MaxOfLanes(d, laneMaxOf());
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        auto hit = hn::Eq(LoadBlock(d, c, b, n), best);
        if (n - b < lanes) hit = hn::And(hit, hn::FirstN(d, static_cast<size_t>(n - b)));
        const intptr_t first = hn::FindFirstTrue(d, hit);
        if (first >= 0) {
          keptIds[0] = b + static_cast<int32_t>(first);
          keptKeys[0] = c[keptIds[0]];
          *keptTotal = 0.0f + s[keptIds[0]];
          return true;
        }
      }
    }
    return false;  // unreachable without NaN keys
  }
  // The candidates, in index order, gathered in registers: each vector's passing lanes
  // compressed, then moved to lanes [found, found + passing) (a store of each piece and a
  // reload of the whole stalled on store forwarding). First every vector's count and where
  // its piece starts (a short scalar chain), then the pieces, independent of one another.
  int32_t pieceStart[kMaxVectors + 1];
  auto countPassing = [&](V vt) {  // the candidates' count, or lanes + 1 for too many
    int32_t vectors = 0;
    pieceStart[0] = 0;
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        if (vectors == kMaxVectors) return lanes + 1;
        auto pass = hn::Ge(LoadBlock(d, c, b, n), vt);
        if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
        pieceStart[vectors + 1] =
            pieceStart[vectors] + static_cast<int32_t>(hn::CountTrue(d, pass));
        ++vectors;
      }
    }
    return pieceStart[vectors];
  };
  V vt = hn::Set(d, floor);
  int32_t found = floor == floor ? countPassing(vt) : lanes + 1;
  if (found > lanes) {
    vt = hn::Set(d, KthLargestLane(d, laneMaxOf(), kk, rot));
    found = countPassing(vt);
    if (found > lanes) return false;
  }

  V v = hn::Set(d, kNegInf);
  auto vIds = hn::Zero(di);
  int32_t piece = 0;
  for (int32_t j = 0; j < count; ++j) {
    for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes, ++piece) {
      const int32_t at = pieceStart[piece];
      const int32_t passing = pieceStart[piece + 1] - at;
      if (passing == 0) continue;
      const V x = LoadBlock(d, c, b, n);
      auto pass = hn::Ge(x, vt);
      if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
      const auto from =
          hn::IndicesFromVec(d, hn::And(hn::Sub(lane, hn::Set(di, at)), hn::Set(di, lanes - 1)));
      const auto place =
          hn::RebindMask(d, hn::AndNot(hn::FirstN(di, static_cast<size_t>(at)),
                                       hn::FirstN(di, static_cast<size_t>(at + passing))));
      v = hn::IfThenElse(place, hn::TableLookupLanes(hn::Compress(x, pass), from), v);
      const auto ids = hn::Compress(hn::Iota(di, b), hn::RebindMask(di, pass));
      vIds = hn::IfThenElse(hn::RebindMask(di, place),
                            hn::BitCast(di, hn::TableLookupLanes(hn::BitCast(d, ids), from)), vIds);
    }
  }
  HWY_ALIGN float candKeys[kMaxLanes];
  HWY_ALIGN int32_t candIds[kMaxLanes];
  hn::Store(v, d, candKeys);
  hn::Store(vIds, di, candIds);
  // Rank each candidate: how many candidates beat it (a greater key, or an equal key and
  // a lower index; candidates are in index order). Ranks are a permutation of 0..found-1.
  auto rank = hn::Zero(di);
  for (int32_t j = 0; j < found; ++j) {
    const V other = hn::Set(d, candKeys[j]);
    const auto later = hn::RebindMask(d, hn::Gt(lane, hn::Set(di, j)));
    const auto beats = hn::Or(hn::Gt(other, v), hn::And(later, hn::Eq(other, v)));
    rank = hn::Sub(rank, hn::VecFromMask(di, hn::RebindMask(di, beats)));
  }
  HWY_ALIGN int32_t ranks[kMaxLanes];
  hn::Store(rank, di, ranks);
  // Invert the ranks without branches (slots kk..found-1 receive the displaced
  // candidates), then the kept scores' sum in index order, from 0, as the spec
  // renormalises: the kept candidates compressed in their (index) order.
  HWY_ALIGN int32_t slotIds[kMaxLanes];
  HWY_ALIGN float slotKeys[kMaxLanes];
  for (int32_t i = 0; i < found; ++i) {
    slotIds[ranks[i]] = candIds[i];
    slotKeys[ranks[i]] = candKeys[i];
  }
  for (int32_t r = 0; r < kk; ++r) {  // a loop, not a memmove call, for eight
    keptIds[r] = slotIds[r];
    keptKeys[r] = slotKeys[r];
  }
  HWY_ALIGN int32_t byIndex[kMaxLanes];
  hn::Store(hn::Compress(hn::Load(di, candIds), hn::Lt(rank, hn::Set(di, kk))), di, byIndex);
  float total = 0.0f;
  for (int32_t j = 0; j < kk; ++j) total += s[byIndex[j]];
  *keptTotal = total;
  return true;
}

// The per-call state of Rows: what depends only on the parameters and the target.
struct RowsSetup {
  int32_t lanes, kk, size;
  bool alignedGroups, fastSelect;
  Rotations rot;
#if MOE_GROUP_NETWORK
  std::optional<GroupNetwork> network;
#endif
  // The screened sigmoid rows (DecideScreened): whether they apply, and delta, a bound on
  // |estimated key - key| with room for one rounding of a threshold.
  bool screen = false;
  float delta = 0.0f;
  double maxBias = 0.0;  // max |b| over the experts, 0 without a bias
  RowsSetup(D d, const FamilyParams& p, bool allowScreen)
      : lanes(static_cast<int32_t>(hn::Lanes(d))),
        kk(p.keptCount()),
        size(p.groupSize()),
        alignedGroups(p.groups > 1 && size % lanes == 0),
        // The fast selection ranks at most one vector of candidates: kk of at most half a
        // vector leaves room for ties and near-ties at the threshold.
        fastSelect(lanes >= 4 && (p.groups == 1 || alignedGroups) &&
                   (2 * kk <= lanes || (p.groups == 1 && p.experts <= lanes))),
        rot(hn::Lanes(d)) {
#if MOE_GROUP_NETWORK
    if (alignedGroups && p.groups <= 16) network.emplace(p.groups);
#endif
#if MOE_FAMILY_SCREEN
    if (allowScreen) setUpScreen(p);
#else
    (void)allowScreen;
#endif
  }

#if MOE_FAMILY_SCREEN
  // c = fl(s + b) and the estimate fl(s~ + b) differ by at most kSigmoidEstimateError and
  // the two roundings, each at most 2^-24 (1 + B + error) with B = max |b|; 2^-21 (2 + B)
  // covers them and the rounding of a threshold t - 2 delta (|t| <= 1 + B + 2 delta). A
  // large bias makes the screen coarse: past 1/64 it would seldom decide, so it is off.
  void setUpScreen(const FamilyParams& p) {
    // Below two vectors the exact rows are as fast (measured at E = 16). The argmax (k = 1)
    // was once left to them too, the per-token screen having measured no faster at Llama
    // 4's E = 128; the token-parallel kernel (lane_family-inl.h) is, 145 -> 45 ns a token
    // there, and past its 512 experts the per-token screen is too (E = 1,024: 843-1,009 ->
    // 424-427 ns; an Intel Xeon, one core, T = 65,536 and 8,192).
    if (!p.sigmoid || p.experts < 32 || p.experts % 16 != 0 || p.experts / 16 > kMaxVectors ||
        kk < 1 || 2 * kk > 16) {
      return;
    }
    if (p.groups > 1 && !network) return;
    if (p.bias != nullptr) {
      for (int32_t e = 0; e < p.experts; ++e) {
        maxBias = std::max(maxBias, std::fabs(double(p.bias[e])));
      }
    }
    const double bound = double(kSigmoidEstimateError) + std::ldexp(2.0 + maxBias, -21);
    if (!(bound < 1.0 / 64)) return;  // also a NaN or infinite bias
    delta = std::nextafter(static_cast<float>(bound), 1.0f);
    screen = true;
  }
#endif
};

// The kept groups of a row with groups (no NaN key) into scratch.keptGroups; false when a
// group score is NaN (+inf + -inf in a top-2 sum).
HWY_INLINE bool KeepGroups(D d, const FamilyParams& p, const RowsSetup& setup,
                           FamilyScratch& scratch) {
  if (setup.alignedGroups) {
#if MOE_GROUP_NETWORK
    if (setup.network) {
      GroupScoresNetwork(p, *setup.network, scratch);
    } else {
      GroupScoresAligned(d, p, scratch);
    }
#else
    GroupScoresAligned(d, p, scratch);
#endif
  } else {
    const float* c = scratch.keys.data();
    for (int32_t g = 0; g < p.groups; ++g) {
      const float* cg = c + int64_t{g} * setup.size;
      scratch.groupScore[g] =
          p.top2Sum ? groupTop2SumScalar(cg, setup.size) : groupMaxScalar(cg, setup.size);
    }
  }
  bool nan = false;
  for (int32_t g = 0; g < p.groups; ++g) nan |= std::isnan(scratch.groupScore[g]);
  if (nan) return false;
  if (p.groups <= setup.lanes) {
    KeepGroupsVector(d, p, scratch);
  } else {
    keepGroupsScalar(p, scratch);
  }
  return true;
}

// Selects the kept experts of a row whose keys (and kept groups) are ready, and writes its
// ids and gates.
HWY_INLINE void SelectAndWrite(D d, const FamilyParams& p, const RowsSetup& setup,
                               FamilyScratch& scratch, int32_t* rowIds, float* rowGates) {
  const int32_t start = 0;
  const int32_t* spans = &start;
  int32_t spanCount = 1;
  int32_t span = p.experts;
  if (p.groups > 1) {
    for (int32_t j = 0; j < p.topkGroups; ++j) {
      scratch.order[j] = scratch.keptGroups[j] * setup.size;
    }
    spans = scratch.order.data();
    spanCount = p.topkGroups;
    span = setup.size;
  }
  // With the groups' second keys known (the merging network), the least second key of the
  // kept groups is reached by two keys of each kept group: a threshold when that makes kk.
  float floor = std::numeric_limits<float>::quiet_NaN();
#if MOE_GROUP_NETWORK
  if (setup.network && 2 * p.topkGroups >= setup.kk) {
    floor = std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < p.topkGroups; ++j) {
      floor = std::min(floor, scratch.groupSecond[scratch.keptGroups[j]]);
    }
  }
#endif
  float total;
  if (setup.fastSelect && SelectFast(d, scratch.keys.data(), p.experts, spans, spanCount, span,
                                     setup.kk, setup.rot, floor, scratch.scores.data(),
                                     scratch.keptIds.data(), scratch.keptKeys.data(), &total)) {
    writeFamilyGatesWithTotal(p, scratch.scores.data(), scratch.keptIds.data(), total, rowIds,
                              rowGates);
  } else {
    selectKeptScalar(p, scratch);
    writeFamilyGates(p, scratch.scores.data(), scratch.keptIds.data(), rowIds, rowGates);
  }
}

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
    __m512i rank = _mm512_setzero_si512();
    for (int32_t j = 0; j < p.groups; ++j) {
      const __m512 other = _mm512_permutexvar_ps(_mm512_set1_epi32(j), gs);
      const __mmask16 later = _mm512_cmpgt_epi32_mask(lane, _mm512_set1_epi32(j));
      const __mmask16 beats = _mm512_cmp_ps_mask(other, gs, _CMP_GT_OQ) |
                              (later & _mm512_cmp_ps_mask(other, gs, _CMP_EQ_OQ));
      rank = _mm512_mask_add_epi32(rank, beats, rank, _mm512_set1_epi32(1));
    }
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
  // Rank each candidate: how many beat it (a greater key, or an equal key and a lower
  // index; candidates are in index order); lanes past found rank found or more.
  __m512i rank = _mm512_setzero_si512();
  for (int32_t j = 0; j < r.found; ++j) {
    const __m512 other = _mm512_permutexvar_ps(_mm512_set1_epi32(j), key);
    const __mmask16 later = _mm512_cmpgt_epi32_mask(lane, _mm512_set1_epi32(j));
    const __mmask16 beats = _mm512_cmp_ps_mask(other, key, _CMP_GT_OQ) |
                            (later & _mm512_cmp_ps_mask(other, key, _CMP_EQ_OQ));
    rank = _mm512_mask_add_epi32(rank, beats, rank, _mm512_set1_epi32(1));
  }
  const int32_t kk = setup.kk;
  float total = 0.0f;
  if (p.renormalize) {  // the kept scores in index order, from 0, as the spec sums them
    HWY_ALIGN float byIndex[16];
    _mm512_store_ps(byIndex, _mm512_maskz_compress_ps(
                                 _mm512_cmplt_epi32_mask(rank, _mm512_set1_epi32(kk)), sc));
    for (int32_t j = 0; j < kk; ++j) total += byIndex[j];
  }
  HWY_ALIGN float candScores[16];
  HWY_ALIGN int32_t candIds[16];
  HWY_ALIGN float slotScores[16] = {};
  _mm512_store_ps(candScores, sc);
  _mm512_store_si512(candIds, vid);
  for (int32_t slot = 0; slot < kk; ++slot) {
    const auto i =
        static_cast<int32_t>(__builtin_ctz(_mm512_cmpeq_epi32_mask(rank, _mm512_set1_epi32(slot))));
    rowIds[slot] = candIds[i];
    slotScores[slot] = candScores[i];
  }
  // (s / total) * scale or s * scale, lane by lane as the scalar loop rounds.
  __m512 w = _mm512_load_ps(slotScores);
  if (p.renormalize) w = _mm512_div_ps(w, _mm512_set1_ps(total));
  _mm512_mask_storeu_ps(rowGates, static_cast<__mmask16>((1u << kk) - 1),
                        _mm512_mul_ps(w, _mm512_set1_ps(p.scale)));
  clearEmptySlots(p.k, kk, rowIds, rowGates);
}
#endif

// Tokens go in blocks of kBlock, one step at a time for the whole block (scores, groups,
// selection): each step of one token is a short chain of dependent operations, and the
// next token's same step, independent of it, fills the gaps. A token's result is computed
// by the same code whatever its block: batch invariant.
constexpr int64_t kBlock = 4;

#if MOE_FAMILY_SCREEN
// A screened row's last step: the screen's decision where it has one, else the exact steps
// (or the non-finite row).
HWY_INLINE void FinishScreened(D d, const FamilyParams& p, const RowsSetup& setup, const float* x,
                               FamilyScratch& scratch, const Screened& screened, int32_t* rowIds,
                               float* rowGates) {
  if (screened.ok) {
    DecideScreened(d, p, setup, x, scratch, screened, rowIds, rowGates);
  } else if (ScoresAndKeys(d, p, x, scratch) &&
             (p.groups == 1 || KeepGroups(d, p, setup, scratch))) {
    SelectAndWrite(d, p, setup, scratch, rowIds, rowGates);
  } else {
    writeNonfiniteRow(p.k, setup.kk, rowIds, rowGates);
  }
}

// The screened rows' loop, kept out of Rows so that the exact rows' code is compiled as
// it was (inlined into Rows, it made the Llama 4 rows 10% slower). Rows the screen cannot
// decide take the exact steps.
HWY_NOINLINE void ScreenedRows(D d, const FamilyParams& p, const RowsSetup& setup,
                               const float* logits, int64_t rows, int32_t* ids, float* gates,
                               FamilyScratch* scratch) {
  const int32_t n = p.experts;
  Screened screened[kBlock];
  for (int64_t t0 = 0; t0 < rows; t0 += kBlock) {
    const int64_t block = std::min(kBlock, rows - t0);
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok =
          EstimateKeys(p, logits + (t0 + i) * n, size_t(kBlock) * size_t(n), scratch[i]);
    }
    // Each step for the whole block: one token's step is a chain of dependent operations.
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok = screened[i].ok && ScreenGroups(p, setup, scratch[i], screened[i]);
    }
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok = screened[i].ok && ScreenCount(d, setup, scratch[i], screened[i]);
    }
    for (int64_t i = 0; i < block; ++i) {
      const float* x = logits + (t0 + i) * n;
      int32_t* rowIds = ids + (t0 + i) * p.k;
      float* rowGates = gates + (t0 + i) * p.k;
      FinishScreened(d, p, setup, x, scratch[i], screened[i], rowIds, rowGates);
    }
  }
}
#endif

#if MOE_FAMILY_SCREEN && MOE_LANE_FAMILY
// Sigmoid rows the token-parallel kernel takes (lane_family-inl.h: DeepSeek-V3's shape
// among them), 16 at a time; the rows it hands back take the per-token screen and then the
// exact steps, so the output is the exact rows' bit for bit.
HWY_NOINLINE void LaneFamilyRows(D d, const FamilyParams& p, const RowsSetup& setup,
                                 const LaneFamily& f, const float* logits, int64_t rows,
                                 int32_t* ids, float* gates, FamilyScratch& scratch) {
  __m512 lists[8 * kLaneFamilyMaxGroups];
  __m512 drops[kLaneFamilyMaxGroups];
  LaneFamilyLeft left;
  const auto exactSigmoid = [d](__m512 x) { return Sigmoid(d, V{x}).raw; };
  const int32_t n = p.experts;
  InvalidFlagScope invalidFlag;
  // Rows of whole blocks (LaneFamily::setUp), in strided runs from kLaneStepMinExperts on.
  ForEachLaneGroup(rows, n >= kLaneStepMinExperts, [&](int64_t t0, auto step) {
    constexpr int kStep = decltype(step)::value;
    const auto group = static_cast<int32_t>(std::min<int64_t>(kNetworkGroup, rows - t0));
    const float* x0 = logits + t0 * n;
    if (left.invalidRaised) invalidFlag.Clear();
    left.invalidRaised = false;
    // DeepSeek-V3's E = 256 with its row offsets known to the compiler.
    if (group == kNetworkGroup && n == 256 && f.shortLists) {
      LaneFamilyGroup<256, 8, kStep, 4>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k,
                                        exactSigmoid, lists, drops, left);
    } else if (group == kNetworkGroup && n == 256) {
      LaneFamilyGroup<256, 8, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k,
                                        exactSigmoid, lists, drops, left);
    } else if (f.codeBits == 8) {
      LaneFamilyGroup<0, 8, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k, exactSigmoid,
                                      lists, drops, left);
    } else {
      LaneFamilyGroup<0, 9, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k, exactSigmoid,
                                      lists, drops, left);
    }
    left.invalidRaised |= left.rows != 0;  // the exact steps may meet a row's NaN
    for (uint32_t rest = left.rows; rest != 0; rest &= rest - 1) {
      const int32_t i = __builtin_ctz(rest);
      const int64_t t = t0 + int64_t{i} * kStep;
      const float* x = logits + t * n;
      int32_t* rowIds = ids + t * p.k;
      float* rowGates = gates + t * p.k;
      // The per-token screen on the kept groups the kernel found (its margins are on
      // unrounded estimates, and it takes more candidates), then the exact steps; straight
      // to them when the kept groups are unknown.
      Screened screened;
      screened.ok = false;
      if (((left.groupsUnknown >> i) & 1) == 0) {
        uint32_t kept = 0;
        for (int32_t g = 0; g < f.groups; ++g) kept |= ((left.keptGroup[g] >> i) & 1u) << g;
        screened.ok = ScreenKnownGroups(p, setup, x, kept, left.floor[i], scratch, screened) &&
                      ScreenCount(d, setup, scratch, screened);
      }
      FinishScreened(d, p, setup, x, scratch, screened, rowIds, rowGates);
    }
  });
}
#endif

void Rows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids, float* gates,
          bool allowScreen) {
  const D d;
  const RowsSetup setup(d, p, allowScreen);
  const int32_t n = p.experts;
  const size_t padded = (static_cast<size_t>(n) + setup.lanes - 1) / setup.lanes * setup.lanes;
  std::vector<FamilyScratch> scratch;
  scratch.reserve(kBlock);
  for (int64_t i = 0; i < kBlock; ++i) scratch.emplace_back(p, padded);
  bool ok[kBlock];
#if MOE_FAMILY_SCREEN
  if (setup.screen) {
#if MOE_LANE_FAMILY
    LaneFamily lanes;
    if (lanes.setUp(p, setup.delta, setup.maxBias)) {
      LaneFamilyRows(d, p, setup, lanes, logits, rows, ids, gates, scratch[0]);
      return;
    }
#endif
    ScreenedRows(d, p, setup, logits, rows, ids, gates, scratch.data());
    return;
  }
#endif
  for (int64_t t0 = 0; t0 < rows; t0 += kBlock) {
    const int64_t block = std::min(kBlock, rows - t0);
    for (int64_t i = 0; i < block; ++i) {
      ok[i] = ScoresAndKeys(d, p, logits + (t0 + i) * n, scratch[i]);
    }
    if (p.groups > 1) {
      for (int64_t i = 0; i < block; ++i) {
        ok[i] = ok[i] && KeepGroups(d, p, setup, scratch[i]);
      }
    }
    for (int64_t i = 0; i < block; ++i) {
      int32_t* rowIds = ids + (t0 + i) * p.k;
      float* rowGates = gates + (t0 + i) * p.k;
      if (ok[i]) {
        SelectAndWrite(d, p, setup, scratch[i], rowIds, rowGates);
      } else {
        writeNonfiniteRow(p.k, setup.kk, rowIds, rowGates);
      }
    }
  }
}

}  // namespace family

void FamilyRows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                float* gates) {
  family::Rows(p, logits, rows, ids, gates, true);
}

#if MOE_FAMILY_SCREEN
// For the tests: the rows without the screen (every score exact), which the screened rows
// must equal bit for bit; and the two sigmoids element-wise, for the estimate's bound.
void FamilyRowsUnscreened(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                          float* gates) {
  family::Rows(p, logits, rows, ids, gates, false);
}
void FamilySigmoidArray(const float* in, float* out, size_t n) {
  const family::D d;
  for (size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const family::V x{_mm512_maskz_loadu_ps(m, in + i)};
    _mm512_mask_storeu_ps(out + i, m, family::Sigmoid(d, x).raw);
  }
}
void SigmoidEstimateArray(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m, SigmoidEstimate(_mm512_maskz_loadu_ps(m, in + i)));
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::detail {

HWY_EXPORT(FamilyRows);

void autoFamilyRows(const FamilyParams& p, const float* l, int64_t r, int32_t* i, float* g) {
  HWY_DYNAMIC_DISPATCH(FamilyRows)(p, l, r, i, g);
}

#if HWY_TARGETS & HWY_AVX2
void avx2FamilyRows(const FamilyParams& p, const float* l, int64_t r, int32_t* i, float* g) {
  N_AVX2::FamilyRows(p, l, r, i, g);
}
#else
void avx2FamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*) {}
#endif

#if HWY_TARGETS & HWY_AVX3
void avx512FamilyRows(const FamilyParams& p, const float* l, int64_t r, int32_t* i, float* g) {
  N_AVX3::FamilyRows(p, l, r, i, g);
}
void avx512FamilyRowsUnscreened(const FamilyParams& p, const float* l, int64_t r, int32_t* i,
                                float* g) {
  N_AVX3::FamilyRowsUnscreened(p, l, r, i, g);
}
void avx512FamilySigmoid(const float* in, float* out, size_t n) {
  N_AVX3::FamilySigmoidArray(in, out, n);
}
void avx512SigmoidEstimate(const float* in, float* out, size_t n) {
  N_AVX3::SigmoidEstimateArray(in, out, n);
}
#else
void avx512FamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*) {}
void avx512FamilyRowsUnscreened(const FamilyParams&, const float*, int64_t, int32_t*, float*) {}
void avx512FamilySigmoid(const float*, float*, size_t) {}
void avx512SigmoidEstimate(const float*, float*, size_t) {}
#endif

}  // namespace moe::detail
#endif  // HWY_ONCE
