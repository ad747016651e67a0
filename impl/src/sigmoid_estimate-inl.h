// An estimate of the AVX-512 family kernel's sigmoid in 8 vector operations (the kernel's
// own, 1 / (1 + exp(-x)) with fast_exp-inl.h's exp and a correctly rounded division, takes
// about 20 and a VDIVPS), within kSigmoidEstimateError of it for every float. The family
// kernel screens with it: experts whose estimated keys are too far below the k-th (or a
// group's second) cannot be kept, so only the few near the top get the exact sigmoid.
// Re-included once per Highway target by route_family_simd.cpp, hence the toggle guard.
//
// Method: e^-x = 2^t, t = -x log2(e), split as t = floor(t) + f with f in [0, 1) by
// VREDUCEPS; 2^f by a cubic through the Chebyshev nodes of [0, 1] (relative error
// 1.0e-4), times 2^floor(t) by VSCALEFPS, which takes the floor itself (overflow to inf,
// underflow to 0, as the sigmoid wants); then VRCP14PS of 1 + e^-x (relative error below
// 2^-14). A relative error r of e^-x moves s = 1 / (1 + e^-x) by at most r s (1 - s), and
// the reciprocal's moves it by 2^-14 s: at most 1.0e-4 s (1 - s) + 6.1e-5 s <= 6.6e-5
// (at s = 0.8), the other roundings far below; kSigmoidEstimateError claims 7e-5, and
// tests/impl/route_v2_screen_test.cpp measures 4.36e-5 over every float. NaN gives NaN
// (the row then takes the exact path).
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
  // 2^f on [0, 1): the cubic through the four Chebyshev nodes (relative error 1.0e-4).
  constexpr float C0 = 0x1.fff2eep-1f, C1 = 0x1.6484aep-1f, C2 = 0x1.cc2becp-3f,
                  C3 = 0x1.43732cp-4f;
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(-0x1.715476p+0f));
  // f = t - floor(t) in [0, 1) by VREDUCEPS; VSCALEFPS multiplies by 2^floor(t) itself.
  const __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(C3);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(C2));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(C1));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(C0));
  const __m512 e = _mm512_scalef_ps(p, t);
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
