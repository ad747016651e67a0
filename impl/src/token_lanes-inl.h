// Token-parallel routing kernels: one vector lane per token (16 on AVX-512, 8 on AVX2).
// Re-included once per Highway target by route_simd.cpp (foreach_target), hence the
// toggle guard instead of #pragma once.
//
// A group of `lanes` tokens walks the experts e = 0..E-1 in index order: the tokens'
// logits of expert e are gathered into one vector, and each lane keeps its own sorted
// top-K list in K vector registers (values and indices). An expert enters a lane's list
// through a compare-exchange chain with STRICT `>`: an exact tie keeps the earlier, lower
// index (and -0 == +0 falls out of the float compare), which is the spec's routing rule.
// When no lane beats its current K-th, the chain is skipped (one vector compare).
//
// Every lane computes exactly what that token alone would compute (lane-wise arithmetic
// only; padded lanes of the last group re-read a real token and are discarded), so the
// output is bitwise independent of the batch and of the thread count. Whether a (target,
// E, k) takes this path depends on nothing else (UsesTokenLanes).
#if defined(MOE_IMPL_TOKEN_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_TOKEN_LANES_INL_H_
#undef MOE_IMPL_TOKEN_LANES_INL_H_
#else
#define MOE_IMPL_TOKEN_LANES_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace tl = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MOE_TOKEN_LANES
#define MOE_TOKEN_LANES 1

// Lists longer than this use the per-token kernels (the chain costs about 5K vector ops
// per expert).
constexpr int32_t kLaneTopKMax = 16;

// Whether this target routes (E, kk = min(k, E)) through the token-parallel kernels: where
// they measured faster than the per-token kernels (bench_routers, one core, E in {8, 64,
// 256}, k in {2, 8}; docs/impl.md), extrapolated between those sizes. k = 1 stays on the
// per-token argmax. The per-token kernel's fast path wins for large E with small k (few
// candidates pass its threshold), the chain wins for small E and, on AVX2, for k > 4
// where the per-token kernel has no fast path. Depends on nothing but the target, E and
// kk, so a token always takes the same path whatever its batch.
inline bool UsesTokenLanes(int32_t experts, int32_t kk, bool probs) {
  const auto lanes = static_cast<int32_t>(tl::Lanes(tl::ScalableTag<float>()));
  if (kk < 2 || kk > kLaneTopKMax) return false;
  if (lanes >= 16) return experts <= 64 || (!probs && kk <= 2 && experts <= 256);
  // 8 lanes (AVX2)
  const bool wideK = 2 * kk > lanes;  // no per-token fast path beyond one vector
  if (experts <= lanes) return probs || 4 * kk <= lanes;
  return wideK && experts <= 256;
}

using LD = tl::ScalableTag<float>;
using LV = tl::Vec<LD>;
using LDI = tl::RebindToSigned<LD>;
using LVI = tl::Vec<LDI>;

constexpr size_t kLaneMax = HWY_MAX_BYTES / sizeof(float);

// A group of up to `lanes` consecutive tokens: lane i reads row min(i, valid - 1).
struct LaneGroup {
  const float* rows;  // the group's first row
  int32_t valid;      // real tokens in the group (the rest are padding)
  LVI offsets;        // lane i: the first logit of its row, relative to `rows`
};

inline LaneGroup MakeLaneGroup(const float* rows, int32_t valid, int32_t experts) {
  const LDI di;
  const LVI row = tl::Min(tl::Iota(di, 0), tl::Set(di, valid - 1));
  return {rows, valid, tl::Mul(row, tl::Set(di, experts))};
}

HWY_INLINE LV GatherExpert(const LaneGroup& g, int32_t e) {
  return tl::GatherIndex(LD(), g.rows + e, g.offsets);
}

// The K best of each lane so far, best first; empty slots hold -inf and index -1.
template <int K>
struct LaneTopK {
  LV val[K];
  LVI idx[K];

  void Clear() {
#pragma GCC unroll 16
    for (int s = 0; s < K; ++s) {
      val[s] = tl::Set(LD(), -std::numeric_limits<float>::infinity());
      idx[s] = tl::Set(LDI(), -1);
    }
  }

  // Offers expert e's values x (e larger than every expert offered before). takes[s]:
  // x strictly beats slot s, so it lands at s or above; the list is sorted, so takes is
  // set from the landing slot down. Slot s then receives slot s-1 (when x lands above
  // it) or x (when x lands exactly there); slots above the landing slot keep theirs. The
  // displaced elements are never compared again: they carry lower indices and stay ahead
  // of their equals. While filling (e < K) empty slots (index -1, at the bottom) take x
  // too, so -inf logits are kept when there are fewer than K finite ones. Every slot is
  // computed from the old list: no dependency chain along the slots.
  template <bool kFilling>
  HWY_INLINE void Offer(const LV x, int32_t e) {
    tl::Mask<LD> takes[K];
#pragma GCC unroll 16
    for (int s = 0; s < K; ++s) {
      takes[s] = tl::Gt(x, val[s]);
      if (kFilling) {
        takes[s] = tl::Or(takes[s], tl::RebindMask(LD(), tl::Lt(idx[s], tl::Zero(LDI()))));
      }
    }
    const LVI xi = tl::Set(LDI(), e);
#pragma GCC unroll 16
    for (int s = K - 1; s > 0; --s) {
      const auto above = takes[s - 1];
      const auto aboveI = tl::RebindMask(LDI(), above);
      val[s] = tl::IfThenElse(takes[s], tl::IfThenElse(above, val[s - 1], x), val[s]);
      idx[s] = tl::IfThenElse(tl::RebindMask(LDI(), takes[s]),
                              tl::IfThenElse(aboveI, idx[s - 1], xi), idx[s]);
    }
    val[0] = tl::IfThenElse(takes[0], x, val[0]);
    idx[0] = tl::IfThenElse(tl::RebindMask(LDI(), takes[0]), xi, idx[0]);
  }

  // Offers x only when some lane beats its current K-th (one compare and a branch).
  HWY_INLINE void OfferIfBetter(LV x, int32_t e) {
    if (tl::AllFalse(LD(), tl::Gt(x, val[K - 1]))) return;
    Offer<false>(x, e);
  }
};

// Walks experts 0..E-1 of a group through `top`, calling value(e) for each. Returns the
// lane-wise NaN flags of the values (a NaN lane's list is meaningless: the caller writes
// that row as non-finite).
template <int K, class ValueAt>
HWY_INLINE tl::Mask<LD> SelectLanes(int32_t experts, LaneTopK<K>& top, ValueAt value) {
  const LD d;
  top.Clear();
  auto nanLanes = tl::FirstN(d, 0);
  const int32_t filling = std::min<int32_t>(K, experts);
  // The skip test pays once most experts beat no lane's K-th: a lane's e-th expert beats
  // it with probability about K/e on random rows, so all 16 (8) lanes miss with
  // probability (1 - K/e)^lanes, about one half from e = 1.44 K lanes on. Before that
  // the branch would mostly mispredict; the chain runs unconditionally.
  const auto lanes = static_cast<int32_t>(tl::Lanes(d));
  const int32_t skipFrom = std::clamp<int32_t>(K * lanes * 3 / 2, filling, experts);
  for (int32_t e = 0; e < filling; ++e) {
    const LV v = value(e);
    nanLanes = tl::Or(nanLanes, tl::IsNaN(v));
    top.template Offer<true>(v, e);
  }
  for (int32_t e = filling; e < skipFrom; ++e) {
    const LV v = value(e);
    nanLanes = tl::Or(nanLanes, tl::IsNaN(v));
    top.template Offer<false>(v, e);
  }
  for (int32_t e = skipFrom; e < experts; ++e) {
    const LV v = value(e);
    nanLanes = tl::Or(nanLanes, tl::IsNaN(v));
    top.OfferIfBetter(v, e);
  }
  return nanLanes;
}

inline uint64_t LaneBits(tl::Mask<LD> m) {
  uint8_t bytes[8] = {0};
  tl::StoreMaskBits(LD(), m, bytes);
  uint64_t bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  return bits;
}

// Writes the group's rows: slots 0..kk-1 from the lane vectors, a non-finite row where
// `nonfinite` is set, empty slots past kk.
template <int K>
HWY_INLINE void StoreLanes(const LaneGroup& g, int32_t k, int32_t kk, const LVI* idx,
                           const LV* gate, uint64_t nonfinite, int32_t* ids, float* gates) {
  HWY_ALIGN int32_t idBuf[K][kLaneMax];
  HWY_ALIGN float gateBuf[K][kLaneMax];
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    tl::Store(idx[s], LDI(), idBuf[s]);
    tl::Store(gate[s], LD(), gateBuf[s]);
  }
  for (int32_t i = 0; i < g.valid; ++i) {
    int32_t* rowIds = ids + int64_t{i} * k;
    float* rowGates = gates + int64_t{i} * k;
    if ((nonfinite >> i) & 1) {
      writeNonfiniteRow(k, kk, rowIds, rowGates);
      continue;
    }
    for (int32_t s = 0; s < kk; ++s) {
      rowIds[s] = idBuf[s][i];
      rowGates[s] = gateBuf[s][i];
    }
    clearEmptySlots(k, kk, rowIds, rowGates);
  }
}

// Logits mode: top-K on the logits, then per lane exp(kept - best) for the kk kept, summed
// in slot order from 0, one division each. A lane whose best is +inf or -inf (every logit
// -inf) gets NaN gates (inf - inf), as the per-token kernel; a NaN logit: nonfinite row.
template <int K>
void LogitsLanesGroup(const LaneGroup& g, int32_t experts, int32_t k, int32_t* ids, float* gates) {
  const LD d;
  const int32_t kk = std::min(k, experts);
  LaneTopK<K> top;
  const auto nanLanes = SelectLanes<K>(experts, top, [&](int32_t e) { return GatherExpert(g, e); });
  const LV best = top.val[0];
  LV ex[K];
  LV sum = tl::Zero(d);
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    ex[s] = tl::Exp(d, tl::Sub(top.val[s], best));
    sum = tl::Add(sum, ex[s]);
  }
  const auto finite = tl::IsFinite(best);
  const LV nan = tl::Set(d, std::numeric_limits<float>::quiet_NaN());
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    ex[s] = tl::IfThenElse(finite, tl::Div(ex[s], sum), nan);
  }
  StoreLanes<K>(g, k, kk, top.idx, ex, LaneBits(nanLanes), ids, gates);
}

// Probabilities mode, as the binary32 spec orders it: per lane the max, exp(x - max) for
// every expert summed in index order, one division per probability; top-K on the
// probabilities (exact ties, also of rounded probabilities, to the lower index); gates
// p / (the kept probabilities summed in index order). `exps` holds E x lanes floats.
template <int K>
void ProbsLanesGroup(const LaneGroup& g, int32_t experts, int32_t k, float* exps, int32_t* ids,
                     float* gates) {
  const LD d;
  const auto lanes = static_cast<int32_t>(tl::Lanes(d));
  const int32_t kk = std::min(k, experts);
  LV m = tl::Set(d, -std::numeric_limits<float>::infinity());
  auto nanLanes = tl::FirstN(d, 0);
  for (int32_t e = 0; e < experts; ++e) {
    const LV x = GatherExpert(g, e);
    m = tl::Max(m, x);
    nanLanes = tl::Or(nanLanes, tl::IsNaN(x));
  }
  // NaN, +inf or only -inf: every probability is NaN in the spec (nonfinite row).
  const auto nonfinite = tl::Or(nanLanes, tl::Not(tl::IsFinite(m)));
  LV sum = tl::Zero(d);
  for (int32_t e = 0; e < experts; ++e) {
    const LV x = tl::Exp(d, tl::Sub(GatherExpert(g, e), m));
    tl::StoreU(x, d, exps + int64_t{e} * lanes);
    sum = tl::Add(sum, x);
  }
  LaneTopK<K> top;
  SelectLanes<K>(experts, top, [&](int32_t e) {
    float* p = exps + int64_t{e} * lanes;
    const LV prob = tl::Div(tl::LoadU(d, p), sum);
    tl::StoreU(prob, d, p);
    return prob;
  });
  // The kept set is every p that beats the kk-th (greater, or equal with a lower index)
  // and the kk-th itself: its sum in index order, adding +0 (no change) for the others.
  const LV kthVal = top.val[kk - 1];
  const LVI kthIdx = top.idx[kk - 1];
  LV kept = tl::Zero(d);
  for (int32_t e = 0; e < experts; ++e) {
    const LV p = tl::LoadU(d, exps + int64_t{e} * lanes);
    const auto notAfter = tl::RebindMask(d, tl::Not(tl::Gt(tl::Set(LDI(), e), kthIdx)));
    const auto in = tl::Or(tl::Gt(p, kthVal), tl::And(tl::Eq(p, kthVal), notAfter));
    kept = tl::Add(kept, tl::IfThenElseZero(in, p));
  }
  LV gate[K];
#pragma GCC unroll 16
  for (int s = 0; s < K; ++s) {
    if (s >= kk) break;
    gate[s] = tl::Div(top.val[s], kept);
  }
  StoreLanes<K>(g, k, kk, top.idx, gate, LaneBits(nonfinite), ids, gates);
}

// The list length for kk: the smallest instantiated K >= kk. A longer list holds the
// same kk best as its prefix (same rule), so the result depends only on kk.
template <class Fn>
HWY_INLINE void WithListLength(int32_t kk, Fn fn) {
  if (kk <= 2) {
    fn(std::integral_constant<int, 2>());
  } else if (kk <= 4) {
    fn(std::integral_constant<int, 4>());
  } else if (kk <= 8) {
    fn(std::integral_constant<int, 8>());
  } else {
    fn(std::integral_constant<int, 16>());
  }
}

inline void LogitsLanesRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                            int32_t* ids, float* gates) {
  const auto lanes = static_cast<int64_t>(tl::Lanes(LD()));
  WithListLength(std::min(k, experts), [&](auto list) {
    for (int64_t t = 0; t < rows; t += lanes) {
      const auto valid = static_cast<int32_t>(std::min(lanes, rows - t));
      const LaneGroup g = MakeLaneGroup(logits + t * experts, valid, experts);
      LogitsLanesGroup<decltype(list)::value>(g, experts, k, ids + t * k, gates + t * k);
    }
  });
}

inline void ProbsLanesRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                           int32_t* ids, float* gates) {
  const auto lanes = static_cast<int64_t>(tl::Lanes(LD()));
  std::vector<float> exps(static_cast<size_t>(experts) * static_cast<size_t>(lanes));
  WithListLength(std::min(k, experts), [&](auto list) {
    for (int64_t t = 0; t < rows; t += lanes) {
      const auto valid = static_cast<int32_t>(std::min(lanes, rows - t));
      const LaneGroup g = MakeLaneGroup(logits + t * experts, valid, experts);
      ProbsLanesGroup<decltype(list)::value>(g, experts, k, exps.data(), ids + t * k,
                                             gates + t * k);
    }
  });
}

#else
#undef MOE_TOKEN_LANES
#define MOE_TOKEN_LANES 0
#endif  // AVX2 / AVX-512 targets

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
