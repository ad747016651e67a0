// An estimate of the AVX-512 family kernel's sigmoid in 8 vector operations (the kernel's
// own, 1 / (1 + exp(-x)) with fast_exp-inl.h's exp and a correctly rounded division, takes
// about 20 and a VDIVPS), within kSigmoidEstimateError of it for every float. The family
// kernel screens with it: experts whose estimated keys are too far below the k-th (or a
// group's second) cannot be kept, so only the few near the top get the exact sigmoid.
// Re-included once per Highway target by route_family_simd.cpp, hence the toggle guard.
//
// Method: e^-x = 2^t, t = -x log2(e), split as t = n + f with n = round(t) and
// |f| <= 1/2; 2^f by a cubic through the Chebyshev nodes of [-1/2, 1/2] (relative error
// 1.0e-4), 2^n by VSCALEFPS (overflow to inf, underflow to 0, as the sigmoid wants), then
// VRCP14PS of 1 + e^-x (relative error below 2^-14). The sigmoid's error from a relative
// error r of e^-x is at most r s (1 - s) <= r / 4, so about 2.5e-5 + 6.1e-5 in all; the
// measured maximum over every float is in tests/impl/sigmoid_estimate_test.cpp. NaN and
// +inf give NaN (the caller then takes the exact path); -inf gives 0.
#if defined(MOE_IMPL_SIGMOID_ESTIMATE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_SIGMOID_ESTIMATE_INL_H_
#undef MOE_IMPL_SIGMOID_ESTIMATE_INL_H_
#else
#define MOE_IMPL_SIGMOID_ESTIMATE_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MOE_SIGMOID_ESTIMATE
#define MOE_SIGMOID_ESTIMATE 1

HWY_INLINE __m512 SigmoidEstimate(__m512 x) {
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(-0x1.715476p+0f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(0x1.c96d5ep-5f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0x1.f0ecf8p-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0x1.62e2d2p-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0x1.fff61cp-1f));
  const __m512 e = _mm512_scalef_ps(p, n);
  return _mm512_rcp14_ps(_mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

#else
#undef MOE_SIGMOID_ESTIMATE
#define MOE_SIGMOID_ESTIMATE 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
