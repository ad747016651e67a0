// Order keys for the AVX-512 routing kernels: a value and its expert in one float, for
// rows of up to 64 experts. Re-included once per Highway target by route_simd.cpp, hence
// the toggle guard.
//
// A key is a value (-0 made +0, -inf made -FLT_MAX, +inf and NaN made FLT_MAX) with its
// low 6 (or 8) bits replaced by the expert's code, 63 - expert (or 255 - expert).
// Compared as floats, keys order as the values do wherever those differ above the code
// bits, no two keys of a row are equal, and a kept key carries its expert's id. Values
// that agree above the code bits (exact ties, +0 and -0, values within 2^-17, or 2^-15,
// relative) share a "tie zone"; where a tie zone touches a decision, the kernel hands the
// row to the general path, which breaks ties to the lower index.
#if defined(MOE_IMPL_ORDER_KEYS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_ORDER_KEYS_INL_H_
#undef MOE_IMPL_ORDER_KEYS_INL_H_
#else
#define MOE_IMPL_ORDER_KEYS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MOE_ORDER_KEYS
#define MOE_ORDER_KEYS 1

// Bitwise: where `mask` has a 1, the bit of `ones`, else that of `zeros`. One VPTERNLOGD
// whose destination is `ones`, the operand that dies here (the mask constant lives on).
HWY_INLINE __m512 SelectBits(__m512i ones, __m512i mask, __m512i zeros) {
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(ones, mask, zeros, 0xE2));
}

// -0 to +0 (they tie), -inf to -FLT_MAX (a key of an infinity would be a NaN), +inf and
// NaN to FLT_MAX: keys are ordered numbers in every row, and a row with a NaN or +inf has
// its best key in FLT_MAX's tie zone, where the general path takes over. One
// VFIXUPIMMPS; the table's nibble c is the response to class c: QNaN, SNaN, zero, +1,
// -inf, +inf, negative, positive -> +MAX, +MAX, +0, src, -MAX, +MAX, src, src.
HWY_INLINE __m512 FiniteForKeys(__m512 v) {
  return _mm512_fixupimm_ps(v, v, _mm512_set1_epi32(0x11EF18EE), 0);
}

// Keys whose low kCodeBits bits hold the expert's code, for rows of up to 2^kCodeBits
// experts: 6 bits up to 64 experts (tie zones of 2^-17 relative), 8 up to 256 (2^-15).
template <int kCodeBits>
struct OrderKeys {
  static constexpr int32_t kCodeMask = (1 << kCodeBits) - 1;
  static constexpr int32_t kMaxExperts = 1 << kCodeBits;

  // Keys of a row's vector r: lane i is expert 16 r + i, code kCodeMask - (16 r + i).
  static HWY_INLINE __m512 OfRowVector(__m512 finite, int r) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i code = _mm512_sub_epi32(_mm512_set1_epi32(kCodeMask - 16 * r), iota);
    return SelectBits(_mm512_castps_si512(finite), _mm512_set1_epi32(~kCodeMask), code);
  }

  static HWY_INLINE __m512i Ids(__m512 keys) {
    return _mm512_andnot_si512(_mm512_castps_si512(keys), _mm512_set1_epi32(kCodeMask));
  }

  // The least key of `key`'s tie zone: code bits cleared where the sign is +, set where -.
  static HWY_INLINE __m512 ZoneBottom(__m512 key) {
    const __m512i bits = _mm512_castps_si512(key);
    return SelectBits(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(kCodeMask), bits);
  }

  // The greatest value in `key`'s tie zone: code bits set where the sign is +, cleared
  // where - (keys of finite values: the top of FLT_MAX's zone is still finite).
  static HWY_INLINE __m512 ZoneTop(__m512 key) {
    const __m512i bits = _mm512_castps_si512(key);
    const __m512i notSign = _mm512_srai_epi32(_mm512_xor_si512(bits, _mm512_set1_epi32(-1)), 31);
    return SelectBits(notSign, _mm512_set1_epi32(kCodeMask), bits);
  }

  // The lanes whose key lies in FLT_MAX's tie zone: where FiniteForKeys put a NaN or +inf
  // (or the value is FLT_MAX itself), rows the keys cannot decide.
  static HWY_INLINE __mmask16 AtFloatMax(__m512 key) {
    return _mm512_cmp_ps_mask(key, ZoneBottom(_mm512_set1_ps(std::numeric_limits<float>::max())),
                              _CMP_GE_OQ);
  }

  // Whether two keys share a tie zone, lane by lane.
  static HWY_INLINE __mmask16 SameZone(__m512 a, __m512 b) {
    return _mm512_testn_epi32_mask(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)),
                                   _mm512_set1_epi32(~kCodeMask));
  }
};

#else
#undef MOE_ORDER_KEYS
#define MOE_ORDER_KEYS 0
#endif  // AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
