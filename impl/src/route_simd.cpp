// The vectorised routers: one fused pass per token with Highway, compiled for every
// x86 target (foreach_target) and callable per target by name or by dynamic dispatch.
//
// Per token, probabilities mode: max (and a NaN check), exp(x - max) with Highway's Exp
// and a lane-wise sum, one division per expert, top-k on the probabilities, and the
// renormalisation of topk_select.hpp. Logits mode: top-k on the logits (same scan,
// NaN check fused), then k exponentials. The lane-wise summation order depends only on
// E and the target, so a token's result is bitwise independent of its batch.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "route_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target, before highway.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "moe/detail/route_kernels.hpp"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

size_t paddedSize(int32_t n, size_t lanes) {
  return (static_cast<size_t>(n) + lanes - 1) / lanes * lanes;
}

// Elements [b, b + lanes) of an array of n floats. Lanes past n read -inf: it never wins
// a strict comparison, is neutral for max, and exp(-inf - m) is 0, neutral for the sum.
HWY_INLINE V LoadBlock(D d, const float* row, int32_t b, int32_t n) {
  const size_t lanes = hn::Lanes(d);
  if (static_cast<size_t>(n - b) >= lanes) return hn::LoadU(d, row + b);
  HWY_ALIGN float buf[kMaxLanes];
  for (size_t i = 0; i < lanes; ++i) buf[i] = kNegInf;
  std::memcpy(buf, row + b, static_cast<size_t>(n - b) * sizeof(float));
  return hn::Load(d, buf);
}

HWY_INLINE uint64_t MaskBits(D d, hn::Mask<D> m) {
  uint8_t bytes[8] = {0};
  hn::StoreMaskBits(d, m, bytes);
  uint64_t bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  return bits;
}

// Top-k selection over v[0..n) into `top` (capacity kk <= kInsertionTopKMax). Elements
// 0..kk-1 are inserted first; then each block is compared with the current threshold in
// one vector compare and only lanes strictly above it are inserted, in index order, so
// exact ties keep the lower index. Returns whether any element was NaN.
HWY_INLINE bool SelectTopKVector(D d, const float* v, int32_t n, TopList& top) {
  const int32_t kk = top.cap;
  const size_t lanes = hn::Lanes(d);
  for (int32_t i = 0; i < kk; ++i) top.insertLater(v[i], i);
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < n; b += static_cast<int32_t>(lanes)) {
    const V x = LoadBlock(d, v, b, n);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(x)));
    uint64_t bits = MaskBits(d, hn::Gt(x, hn::Set(d, top.threshold())));
    if (b < kk) bits &= (kk - b >= 64) ? 0 : ~((uint64_t{1} << (kk - b)) - 1);
    while (bits != 0) {
      const int32_t i = b + static_cast<int32_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      if (v[i] > top.threshold()) top.insertLater(v[i], i);
    }
  }
  return !hn::AllFalse(d, hn::MaskFromVec(nanLanes));
}

bool AnyNaN(D d, const float* v, int32_t n) {
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < n; b += static_cast<int32_t>(hn::Lanes(d))) {
    const V x = LoadBlock(d, v, b, n);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(x)));
  }
  return !hn::AllFalse(d, hn::MaskFromVec(nanLanes));
}

// Per-chunk working memory: probabilities (padded to whole vectors), and kept lists
// for k beyond the insertion list.
struct Scratch {
  std::vector<float> probs;
  std::vector<float> keptVals;
  std::vector<int32_t> keptIds;
  std::vector<float> keptExps;
  Scratch(D d, int32_t experts, int32_t k) {
    const int32_t kk = std::min(k, experts);
    probs.resize(paddedSize(experts, hn::Lanes(d)));
    if (kk > kInsertionTopKMax) {
      keptVals.resize(static_cast<size_t>(kk));
      keptIds.resize(static_cast<size_t>(kk));
      keptExps.resize(paddedSize(kk, hn::Lanes(d)));
    }
  }
};

void ProbsRow(D d, const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
              Scratch& scratch) {
  const int32_t kk = std::min(k, experts);
  const int32_t lanes = static_cast<int32_t>(hn::Lanes(d));
  V vmax = hn::Set(d, kNegInf);
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < experts; b += lanes) {
    const V xb = LoadBlock(d, x, b, experts);
    vmax = hn::Max(vmax, xb);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(xb)));
  }
  const float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  // NaN, +inf, or all -inf: the spec's probabilities are all NaN.
  if (!hn::AllFalse(d, hn::MaskFromVec(nanLanes)) || !std::isfinite(m)) {
    writeNonfiniteRow(k, kk, ids, gates);
    return;
  }
  float* p = scratch.probs.data();
  const V vm = hn::Set(d, m);
  V acc = hn::Zero(d);
  for (int32_t b = 0; b < experts; b += lanes) {
    const V e = hn::Exp(d, hn::Sub(LoadBlock(d, x, b, experts), vm));
    hn::StoreU(e, d, p + b);
    acc = hn::Add(acc, e);
  }
  const V vsum = hn::SumOfLanes(d, acc);
  for (int32_t b = 0; b < experts; b += lanes) {
    hn::StoreU(hn::Div(hn::LoadU(d, p + b), vsum), d, p + b);
  }
  if (kk <= kInsertionTopKMax) {
    TopList top;
    top.cap = kk;
    SelectTopKVector(d, p, experts, top);
    renormaliseKept(top.idx, top.val, kk, ids, gates);
  } else {
    selectTopKScalar(p, experts, kk, scratch.keptIds.data(), scratch.keptVals.data());
    renormaliseKept(scratch.keptIds.data(), scratch.keptVals.data(), kk, ids, gates);
  }
  clearEmptySlots(k, kk, ids, gates);
}

// Softmax over the kept logits (best first): m = the best, exps lane-wise into `exps`
// (padded to whole vectors), sum in rank order, one division each.
void SoftmaxKept(D d, const int32_t* keptIds, const float* keptVals, int32_t kk, float* exps,
                 int32_t* ids, float* gates) {
  const float m = keptVals[0];
  if (!std::isfinite(m)) {  // a +inf logit, or every logit -inf: inf - inf is NaN
    for (int32_t s = 0; s < kk; ++s) {
      ids[s] = keptIds[s];
      gates[s] = std::numeric_limits<float>::quiet_NaN();
    }
    return;
  }
  const V vm = hn::Set(d, m);
  for (int32_t b = 0; b < kk; b += static_cast<int32_t>(hn::Lanes(d))) {
    hn::StoreU(hn::Exp(d, hn::Sub(LoadBlock(d, keptVals, b, kk), vm)), d, exps + b);
  }
  float sum = 0.0f;
  for (int32_t s = 0; s < kk; ++s) sum += exps[s];
  for (int32_t s = 0; s < kk; ++s) {
    ids[s] = keptIds[s];
    gates[s] = exps[s] / sum;
  }
}

void LogitsRow(D d, const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
               Scratch& scratch) {
  const int32_t kk = std::min(k, experts);
  if (kk <= kInsertionTopKMax) {
    TopList top;
    top.cap = kk;
    if (SelectTopKVector(d, x, experts, top)) {
      writeNonfiniteRow(k, kk, ids, gates);
      return;
    }
    HWY_ALIGN float exps[kInsertionTopKMax + kMaxLanes];
    SoftmaxKept(d, top.idx, top.val, kk, exps, ids, gates);
  } else {
    if (AnyNaN(d, x, experts)) {
      writeNonfiniteRow(k, kk, ids, gates);
      return;
    }
    selectTopKScalar(x, experts, kk, scratch.keptIds.data(), scratch.keptVals.data());
    SoftmaxKept(d, scratch.keptIds.data(), scratch.keptVals.data(), kk, scratch.keptExps.data(),
                ids, gates);
  }
  clearEmptySlots(k, kk, ids, gates);
}

void ProbsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
               float* gates) {
  const D d;
  Scratch scratch(d, experts, k);
  for (int64_t t = 0; t < rows; ++t) {
    ProbsRow(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
  }
}

void LogitsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                float* gates) {
  const D d;
  Scratch scratch(d, experts, k);
  for (int64_t t = 0; t < rows; ++t) {
    LogitsRow(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
  }
}

void ExpArray(const float* in, float* out, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Exp(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float buf[kMaxLanes];
    hn::Store(hn::Exp(d, LoadBlock(d, in + i, 0, static_cast<int32_t>(n - i))), d, buf);
    std::memcpy(out + i, buf, (n - i) * sizeof(float));
  }
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::detail {

HWY_EXPORT(ProbsRows);
HWY_EXPORT(LogitsRows);
HWY_EXPORT(ExpArray);
HWY_EXPORT(TargetName);

void autoProbsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                   float* gates) {
  HWY_DYNAMIC_DISPATCH(ProbsRows)(logits, rows, experts, k, ids, gates);
}
void autoLogitsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                    float* gates) {
  HWY_DYNAMIC_DISPATCH(LogitsRows)(logits, rows, experts, k, ids, gates);
}
void autoExp(const float* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(ExpArray)(in, out, n);
}
const char* autoTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

// A target is callable when it was compiled in (HWY_TARGETS) and this CPU supports it.
#if HWY_TARGETS & HWY_AVX2
bool cpuHasAvx2() {
  return (hwy::SupportedTargets() & HWY_AVX2) != 0;
}
void avx2ProbsRows(const float* l, int64_t r, int32_t e, int32_t k, int32_t* i, float* g) {
  N_AVX2::ProbsRows(l, r, e, k, i, g);
}
void avx2LogitsRows(const float* l, int64_t r, int32_t e, int32_t k, int32_t* i, float* g) {
  N_AVX2::LogitsRows(l, r, e, k, i, g);
}
void avx2Exp(const float* in, float* out, size_t n) {
  N_AVX2::ExpArray(in, out, n);
}
#else
bool cpuHasAvx2() {
  return false;
}
void avx2ProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*) {}
void avx2LogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*) {}
void avx2Exp(const float*, float*, size_t) {}
#endif

#if HWY_TARGETS & HWY_AVX3
bool cpuHasAvx512() {
  return (hwy::SupportedTargets() & HWY_AVX3) != 0;
}
void avx512ProbsRows(const float* l, int64_t r, int32_t e, int32_t k, int32_t* i, float* g) {
  N_AVX3::ProbsRows(l, r, e, k, i, g);
}
void avx512LogitsRows(const float* l, int64_t r, int32_t e, int32_t k, int32_t* i, float* g) {
  N_AVX3::LogitsRows(l, r, e, k, i, g);
}
void avx512Exp(const float* in, float* out, size_t n) {
  N_AVX3::ExpArray(in, out, n);
}
#else
bool cpuHasAvx512() {
  return false;
}
void avx512ProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*) {}
void avx512LogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*) {}
void avx512Exp(const float*, float*, size_t) {}
#endif

}  // namespace moe::detail
#endif  // HWY_ONCE
