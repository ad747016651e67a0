// exp(x) for the arguments softmax gives it, x = logit - max <= 0, on AVX-512 in 13
// vector operations (Highway's general Exp takes about 30 and measured 20 cycles a vector
// here; the lane network takes eight per 16 tokens).
// Re-included once per Highway target by route_simd.cpp, hence the toggle guard.
//
// Method (Cody and Waite's reduction, Taylor's series): q = round(x / ln 2), s = x - q ln 2
// with ln 2 split in two so that q * ln2Hi is exact (|q| <= 151 needs 8 bits; ln2Hi has 16
// significant bits), then e^s = 1 + s + s^2 (1/2 + s/6 + ... + s^5/5040), whose truncation
// error on |s| <= ln(2)/2 is below s^8/8! < 5.2e-9 (0.044 ulp), and e^x = e^s * 2^q by
// VSCALEFPS, which also rounds the gradual underflow correctly. The measured maximum error
// over every float in [-104, 0] is in tests/impl/exp_ulp_test.cpp (FastExpAvx512), and
// must stay within the routers' exp_max_ulp.
#if defined(MOE_IMPL_FAST_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAST_EXP_INL_H_
#undef MOE_IMPL_FAST_EXP_INL_H_
#else
#define MOE_IMPL_FAST_EXP_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MOE_FAST_EXP
#define MOE_FAST_EXP 1

// exp(x) for x <= 0 (and -inf: 0; NaN: NaN). Positive x is outside its contract.
HWY_INLINE __m512 ExpNonPositive(__m512 x) {
  // Below -104 exp rounds to 0 (it already does from -103.98); the clamp keeps -inf out
  // of the reduction. This operand order returns x when x is NaN.
  const __m512 clamped = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  // q = x / ln 2 rounded to an integer: adding 1.5 * 2^23 leaves no fraction bits.
  const __m512 shifter = _mm512_set1_ps(0x1.8p23f);
  const __m512 q =
      _mm512_sub_ps(_mm512_fmadd_ps(clamped, _mm512_set1_ps(0x1.715476p+0f), shifter), shifter);
  const float ln2Hi = 0x1.62e4p-1f;     // 0.693145751953125, 16 significant bits
  const float ln2Lo = 0x1.7f7d1cp-20f;  // ln 2 - ln2Hi
  __m512 s = _mm512_fmadd_ps(q, _mm512_set1_ps(-ln2Hi), clamped);
  s = _mm512_fmadd_ps(q, _mm512_set1_ps(-ln2Lo), s);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.5f));
  const __m512 expS =
      _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(s, s), p, s), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(expS, q);
}

#else
#undef MOE_FAST_EXP
#define MOE_FAST_EXP 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
