// The family kernel's first step (route_family_simd.cpp): each expert's score, the sigmoid
// or the softmax of the row, and its selection key, score plus bias, in one vector pass.
// Re-included once per Highway target by route_family_simd.cpp, hence the toggle guard.
#if defined(MOE_IMPL_FAMILY_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_SCORES_INL_H_
#undef MOE_IMPL_FAMILY_SCORES_INL_H_
#else
#define MOE_IMPL_FAMILY_SCORES_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>

#include "family_select.hpp"
#include "fast_exp-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "simd_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

// The largest float whose expf is finite: below -kExpFinite, the spec's sigmoid
// 1 / (1 + exp(-x)) is 1 / inf = 0.
constexpr float kExpFinite = 0x1.62e42ep6f;  // 88.72283172607421875

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

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
