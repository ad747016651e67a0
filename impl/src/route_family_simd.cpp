// The vectorised moe_route_v2 (Highway, every x86 target; called by name or by dynamic
// dispatch). Per token: the scores and keys in one vector pass (sigmoid or softmax, with
// the AVX-512 kernels' own exp where there is one), the group scores lane-wise when the
// groups are whole vectors, then the kept groups, a threshold selection of the kept
// experts over the eligible vectors, and the gates (family_select.hpp). Steps that do not
// fit the fast paths (unaligned groups, too many candidates) take the scalar steps, which
// decide exactly as the spec does. Orders of summation depend only on the parameters and
// the target, so a token's result is bitwise independent of its batch.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "route_family_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target, before highway.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "family_select.hpp"
#include "fast_exp-inl.h"
#include "moe/detail/route_kernels.hpp"
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
// (whose exp(-x) overflows there). NaN stays NaN.
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
  V nanLanes = hn::Zero(d);
  if (p.sigmoid) {
    for (int32_t b = 0; b < n; b += lanes) {
      const V sb = Sigmoid(d, LoadBlock(d, x, b, n));
      hn::StoreU(sb, d, s + b);
      const V cb = p.bias != nullptr ? hn::Add(sb, LoadBlock(d, p.bias, b, n)) : sb;
      hn::StoreU(cb, d, c + b);
      nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(cb)));
    }
    return hn::AllFalse(d, hn::MaskFromVec(nanLanes));
  }
  V vmax = hn::Set(d, kNegInf);
  for (int32_t b = 0; b < n; b += lanes) {
    const V xb = LoadBlock(d, x, b, n);
    vmax = hn::Max(vmax, xb);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(xb)));
  }
  const float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  if (!hn::AllFalse(d, hn::MaskFromVec(nanLanes)) || !std::isfinite(m)) return false;
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
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(cb)));
  }
  return hn::AllFalse(d, hn::MaskFromVec(nanLanes));
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

// The kk-th largest lane of m: the smallest lane that fewer than kk lanes exceed.
HWY_INLINE float KthLargestLane(D d, V m, int32_t kk) {
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN float v[kMaxLanes];
  hn::Store(m, d, v);
  float t = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < lanes; ++i) {
    int32_t greater = 0;
    for (size_t j = 0; j < lanes; ++j) greater += v[j] > v[i] ? 1 : 0;
    if (greater < kk && v[i] < t) t = v[i];
  }
  return t;
}

// Fast selection of the kk best keys among the eligible experts, whose vectors start at
// starts[0..count) (each `span` long, the last clipped to n): every kept key is >= T, the
// kk-th largest lane maximum, so only keys >= T are ranked (typically ~kk + 2). Writes
// keptIds/keptKeys best first; false when more than one vector's worth pass T.
HWY_INLINE bool SelectFast(D d, const float* c, int32_t n, const int32_t* starts, int32_t count,
                           int32_t span, int32_t kk, int32_t* keptIds, float* keptKeys) {
  const hn::RebindToSigned<D> di;
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  V laneMax = hn::Set(d, kNegInf);
  for (int32_t j = 0; j < count; ++j) {
    for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
      laneMax = hn::Max(laneMax, LoadBlock(d, c, b, n));
    }
  }
  const V vt = hn::Set(d, KthLargestLane(d, laneMax, kk));
  HWY_ALIGN float candKeys[2 * kMaxLanes];
  HWY_ALIGN int32_t candIds[2 * kMaxLanes];
  int32_t found = 0;
  for (int32_t j = 0; j < count; ++j) {
    for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
      const V x = LoadBlock(d, c, b, n);
      auto pass = hn::Ge(x, vt);
      if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
      const auto passing = static_cast<int32_t>(hn::CountTrue(d, pass));
      if (found + passing > lanes) return false;
      hn::CompressStore(x, pass, d, candKeys + found);
      hn::CompressStore(hn::Iota(di, b), hn::RebindMask(di, pass), di, candIds + found);
      found += passing;
    }
  }
  // Rank each candidate: how many candidates beat it (a greater key, or an equal key and
  // a lower index; candidates are in index order). Ranks are a permutation of 0..found-1.
  const V v = hn::IfThenElse(hn::FirstN(d, static_cast<size_t>(found)), hn::Load(d, candKeys),
                             hn::Set(d, kNegInf));
  const auto lane = hn::Iota(di, 0);
  auto rank = hn::Zero(di);
  for (int32_t j = 0; j < found; ++j) {
    const V other = hn::Set(d, candKeys[j]);
    const auto later = hn::RebindMask(d, hn::Gt(lane, hn::Set(di, j)));
    const auto beats = hn::Or(hn::Gt(other, v), hn::And(later, hn::Eq(other, v)));
    rank = hn::Sub(rank, hn::VecFromMask(di, hn::RebindMask(di, beats)));
  }
  HWY_ALIGN int32_t ranks[kMaxLanes];
  hn::Store(rank, di, ranks);
  for (int32_t i = 0; i < found; ++i) {
    if (ranks[i] < kk) {
      keptIds[ranks[i]] = candIds[i];
      keptKeys[ranks[i]] = candKeys[i];
    }
  }
  return true;
}

void Rows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids, float* gates) {
  const D d;
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  const int32_t n = p.experts;
  const int32_t kk = p.keptCount();
  const int32_t size = p.groupSize();
  FamilyScratch scratch(p, (static_cast<size_t>(n) + lanes - 1) / lanes * lanes);
  const bool alignedGroups = p.groups > 1 && size % lanes == 0;
  // The fast selection ranks at most one vector of candidates: kk of at most half a
  // vector leaves room for ties and near-ties at the threshold.
  const bool fastSelect = lanes >= 4 && (p.groups == 1 || alignedGroups) &&
                          (2 * kk <= lanes || (p.groups == 1 && n <= lanes));
  int32_t starts[1] = {0};
  for (int64_t t = 0; t < rows; ++t) {
    int32_t* rowIds = ids + t * p.k;
    float* rowGates = gates + t * p.k;
    if (!ScoresAndKeys(d, p, logits + t * n, scratch)) {
      writeNonfiniteRow(p.k, kk, rowIds, rowGates);
      continue;
    }
    const int32_t* spans = starts;
    int32_t spanCount = 1;
    int32_t span = n;
    if (p.groups > 1) {
      if (alignedGroups) {
        GroupScoresAligned(d, p, scratch);
      } else {
        const float* c = scratch.keys.data();
        for (int32_t g = 0; g < p.groups; ++g) {
          const float* cg = c + int64_t{g} * size;
          scratch.groupScore[g] =
              p.top2Sum ? groupTop2SumScalar(cg, size) : groupMaxScalar(cg, size);
        }
      }
      bool nan = false;  // +inf + -inf in a top-2 sum
      for (int32_t g = 0; g < p.groups; ++g) nan |= std::isnan(scratch.groupScore[g]);
      if (nan) {
        writeNonfiniteRow(p.k, kk, rowIds, rowGates);
        continue;
      }
      keepGroupsScalar(p, scratch);
      for (int32_t j = 0; j < p.topkGroups; ++j) scratch.order[j] = scratch.keptGroups[j] * size;
      spans = scratch.order.data();
      spanCount = p.topkGroups;
      span = size;
    }
    if (!(fastSelect && SelectFast(d, scratch.keys.data(), n, spans, spanCount, span, kk,
                                   scratch.keptIds.data(), scratch.keptKeys.data()))) {
      selectKeptScalar(p, scratch);
    }
    writeFamilyGates(p, scratch.scores.data(), scratch.keptIds.data(), rowIds, rowGates);
  }
}

}  // namespace family

void FamilyRows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                float* gates) {
  family::Rows(p, logits, rows, ids, gates);
}

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
#else
void avx512FamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*) {}
#endif

}  // namespace moe::detail
#endif  // HWY_ONCE
