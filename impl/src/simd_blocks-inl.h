// The Highway building blocks of both vectorised kernels, moe_route_v1's (route_simd.cpp)
// and the family's (route_family_simd.cpp): one vector of a row with -inf past its end, the
// k-th largest lane, each lane's rank by the spec's tie rule, and the calls of one target
// by name. Re-included once per Highway target by each kernel (foreach_target), hence the
// toggle guard.
#if defined(MOE_IMPL_SIMD_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_SIMD_BLOCKS_INL_H_
#undef MOE_IMPL_SIMD_BLOCKS_INL_H_
#else
#define MOE_IMPL_SIMD_BLOCKS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

inline constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// n rounded up to whole vectors of `lanes`.
inline size_t PaddedSize(int32_t n, size_t lanes) {
  return (static_cast<size_t>(n) + lanes - 1) / lanes * lanes;
}

// Lanes [0, n) of a vector's worth of readable memory, -inf beyond.
HWY_INLINE V LoadFirst(D d, const float* p, int32_t n) {
  return hn::IfThenElse(hn::FirstN(d, static_cast<size_t>(n)), hn::LoadU(d, p),
                        hn::Set(d, kNegInf));
}

// Elements [b, b + lanes) of an array of n floats. Lanes past n read -inf: it never wins
// a strict comparison, is neutral for max, and exp(-inf - m) is 0, neutral for the sum.
HWY_INLINE V LoadBlock(D d, const float* row, int32_t b, int32_t n) {
  const size_t lanes = hn::Lanes(d);
  if (static_cast<size_t>(n - b) >= lanes) return hn::LoadU(d, row + b);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // Fault-suppressing masked load: reads nothing past n (and avoids the store-forwarding
  // stall of the buffer below).
  const auto inRow = hn::FirstN(d, static_cast<size_t>(n - b));
  return hn::IfThenElse(inRow, hn::MaskedLoad(inRow, d, row + b), hn::Set(d, kNegInf));
#endif
  HWY_ALIGN float buf[kMaxLanes];
  for (size_t i = 0; i < lanes; ++i) buf[i] = kNegInf;
  std::memcpy(buf, row + b, static_cast<size_t>(n - b) * sizeof(float));
  return hn::Load(d, buf);
}

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
// lane meets every other by a rotation: lanes - 1 permutes and compares). A threshold
// that kk elements reach when m holds lane-wise maxima of distinct elements.
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

// The rank of each of `count` values in index order, vals[0..count) in memory and lane by
// lane in v: how many of them beat it (a greater value, or an equal value at a lower index,
// the spec's tie rule), counted by broadcasting each in turn. The ranks of non-NaN values
// are a permutation of 0..count-1; lanes from count on are not ranked.
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> RankInIndexOrder(D d, V v, const float* vals,
                                                           int32_t count) {
  const hn::RebindToSigned<D> di;
  const auto lane = hn::Iota(di, 0);
  auto rank = hn::Zero(di);
  for (int32_t j = 0; j < count; ++j) {
    const V other = hn::Set(d, vals[j]);
    const auto later = hn::RebindMask(d, hn::Gt(lane, hn::Set(di, j)));
    const auto beats = hn::Or(hn::Gt(other, v), hn::And(later, hn::Eq(other, v)));
    rank = hn::Sub(rank, hn::VecFromMask(di, hn::RebindMask(di, beats)));
  }
  return rank;
}

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::detail {

// Calls one target's function by name: `fn` is HWY_CHOOSE_AVX2(Name) (or another target's),
// the function when this build compiled that target in, else nullptr and nothing to call.
// The routers ask cpuHasAvx2/cpuHasAvx512 first, so a target left out is never asked for.
template <class Fn, class... Args>
HWY_INLINE void CallTarget(Fn fn, Args... args) {
  if constexpr (!std::is_same_v<Fn, std::nullptr_t>) fn(args...);
}

}  // namespace moe::detail

// The doors of route_kernels.hpp to a kernel compiled per target: MOE_DOORS(ProbsRows,
// MOE_ROWS, autoProbsRows, avx2ProbsRows, avx512ProbsRows) exports ProbsRows, and defines
// autoProbsRows by dynamic dispatch (the best target compiled in and present) and
// avx2ProbsRows and avx512ProbsRows by name (MOE_BY_NAME: N_AVX2::ProbsRows, N_AVX3's,
// through CallTarget). A signature names its parameters (in parentheses) and its arguments:
// MOE_ROWS (moe_route_v1's RowsFn), MOE_FAMILY_ROWS (FamilyRowsFn) and MOE_ARRAY
// (element-wise, in to out).
#define MOE_ROWS_PARAMS (const float* l, int64_t r, int32_t e, int32_t k, int32_t* i, float* g)
#define MOE_ROWS_ARGS l, r, e, k, i, g
#define MOE_FAMILY_ROWS_PARAMS \
  (const FamilyParams& p, const float* l, int64_t r, int32_t* i, float* g)
#define MOE_FAMILY_ROWS_ARGS p, l, r, i, g
#define MOE_ARRAY_PARAMS (const float* in, float* out, size_t n)
#define MOE_ARRAY_ARGS in, out, n
#define MOE_BY_NAME(name, fn, sig) \
  void name sig##_PARAMS {         \
    CallTarget(fn, sig##_ARGS);    \
  }
#define MOE_DOORS(kernel, sig, autoName, avx2Name, avx512Name) \
  HWY_EXPORT(kernel);                                          \
  void autoName sig##_PARAMS {                                 \
    HWY_DYNAMIC_DISPATCH(kernel)(sig##_ARGS);                  \
  }                                                            \
  MOE_BY_NAME(avx2Name, HWY_CHOOSE_AVX2(kernel), sig)          \
  MOE_BY_NAME(avx512Name, HWY_CHOOSE_AVX3(kernel), sig)
#endif  // HWY_ONCE

#endif  // MOE_IMPL_SIMD_BLOCKS_INL_H_ toggle
