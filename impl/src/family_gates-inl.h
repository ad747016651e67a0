// The family kernel's last step for candidates ranked in one AVX-512 vector (the screened
// rows, family_screen-inl.h): the row's ids best first and its gates, bit for bit as
// family_select.hpp's writeFamilyGatesWithTotal writes them for the exact rows.
// Re-included once per Highway target by route_family_simd.cpp, hence the toggle guard.
#if defined(MOE_IMPL_FAMILY_GATES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_GATES_INL_H_
#undef MOE_IMPL_FAMILY_GATES_INL_H_
#else
#define MOE_IMPL_FAMILY_GATES_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "moe/detail/route_kernels.hpp"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Lane i holds candidate i (in index order): its expert in `ids`, its unbiased score in
// `scores`, its rank in `rank` (0 best; the kk best are kept). Gates: each kept score over
// the kept scores summed in index order from 0 when renormalising, times the scale.
HWY_INLINE void WriteRankedRow(const FamilyParams& p, int32_t kk, __m512i rank, __m512 scores,
                               __m512i ids, int32_t* rowIds, float* rowGates) {
  float total = 0.0f;
  if (p.renormalize) {  // the kept scores in index order, from 0, as the spec sums them
    HWY_ALIGN float byIndex[16];
    _mm512_store_ps(byIndex, _mm512_maskz_compress_ps(
                                 _mm512_cmplt_epi32_mask(rank, _mm512_set1_epi32(kk)), scores));
    for (int32_t j = 0; j < kk; ++j) total += byIndex[j];
  }
  HWY_ALIGN float candScores[16];
  HWY_ALIGN int32_t candIds[16];
  HWY_ALIGN float slotScores[16] = {};
  _mm512_store_ps(candScores, scores);
  _mm512_store_si512(candIds, ids);
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

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
