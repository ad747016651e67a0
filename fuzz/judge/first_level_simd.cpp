// The first level's vector kernels, compiled once per Highway target and dispatched at run
// time (first_level_simd.hpp). The exp is the judge's own (Cody-Waite reduction, degree-13
// Taylor polynomial), so that its error bound is the one derived in docs/fuzz.md.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "first_level_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off
#include <hwy/highway.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ladder.hpp"
#include "moe/fuzz/first_level.hpp"
#include "moe/fuzz/first_level_simd.hpp"
#include "moe/fuzz/float_bits.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::fuzz::first {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

RowScan ScanRowImpl(const float* x, size_t E) {
  const hn::ScalableTag<float> d;
  const size_t L = hn::Lanes(d);
  const auto inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const auto negInf = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto bad = hn::Zero(d), above = hn::Zero(d), mx = negInf;
  const auto one = hn::Set(d, 1.0f);
  size_t i = 0;
  for (; i + L <= E; i += L) {
    const auto v = hn::LoadU(d, x + i);
    // NaN or +inf marks the row; a lane of 1.0f per mark keeps it branch-free.
    bad = hn::Or(bad, hn::IfThenElseZero(hn::Or(hn::IsNaN(v), hn::Eq(v, inf)), one));
    above = hn::Or(above, hn::IfThenElseZero(hn::Gt(v, negInf), one));
    mx = hn::Max(mx, v);
  }
  bool isBad = !hn::AllTrue(d, hn::Eq(bad, hn::Zero(d)));
  bool isAbove = !hn::AllTrue(d, hn::Eq(above, hn::Zero(d)));
  float m = hn::GetLane(hn::MaxOfLanes(d, mx));
  for (; i < E; ++i) {
    const float v = x[i];
    isBad = isBad || v != v || v == std::numeric_limits<float>::infinity();
    isAbove = isAbove || v > -std::numeric_limits<float>::infinity();
    m = std::max(m, v);
  }
  return {!isBad && isAbove, m};
}

// 1.0f in every lane where v is NaN (nanOnly) or not finite, else 0.
template <class D, class V>
V Marked(D d, V v, bool nanOnly) {
  const auto inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const auto bad = nanOnly ? hn::IsNaN(v) : hn::Or(hn::IsNaN(v), hn::Eq(hn::Abs(v), inf));
  return hn::IfThenElseZero(bad, hn::Set(d, 1.0f));
}

bool AnyMarkedImpl(const float* x, size_t n, bool nanOnly) {
  const hn::ScalableTag<float> d;
  const size_t L = hn::Lanes(d);
  auto marks = hn::Zero(d);
  size_t i = 0;
  for (; i + L <= n; i += L) marks = hn::Or(marks, Marked(d, hn::LoadU(d, x + i), nanOnly));
  bool any = !hn::AllTrue(d, hn::Eq(marks, hn::Zero(d)));
  for (; i < n; ++i) any = any || x[i] != x[i] || (!nanOnly && !std::isfinite(x[i]));
  return any;
}

// Vector tail handling for the range scans below: the lanes past n read as `fill`.
template <class D>
hn::Vec<D> LoadPadded(D d, const double* p, size_t n, double fill) {
  HWY_ALIGN double buf[HWY_MAX_BYTES / sizeof(double)];
  for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = i < n ? p[i] : fill;
  return hn::Load(d, buf);
}

size_t CountNotBelowImpl(const double* c, const double* radius, size_t n, double threshold) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  const auto thr = hn::Set(d, threshold);
  size_t count = 0;
  for (size_t i = 0; i < n; i += L) {
    const bool whole = i + L <= n;
    const auto key = whole ? hn::LoadU(d, c + i) : LoadPadded(d, c + i, n - i, -HUGE_VAL);
    const auto up =
        hn::Add(key, whole ? hn::LoadU(d, radius + i) : LoadPadded(d, radius + i, n - i, 0.0));
    count += hn::CountTrue(d, hn::Not(hn::Lt(up, thr)));
  }
  return count;
}

GroupTop GroupTopImpl(const double* c, const double* radius, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  const auto negInf = hn::Set(d, -HUGE_VAL);
  auto best = negInf, rad = hn::Zero(d);
  for (size_t i = 0; i < n; i += L) {
    best = hn::Max(best, i + L <= n ? hn::LoadU(d, c + i) : LoadPadded(d, c + i, n - i, -HUGE_VAL));
    rad =
        hn::Max(rad, i + L <= n ? hn::LoadU(d, radius + i) : LoadPadded(d, radius + i, n - i, 0.0));
  }
  const double b = hn::GetLane(hn::MaxOfLanes(d, best));
  const auto bv = hn::Set(d, b);
  // The second largest: b again when it occurs twice, else the largest below b.
  size_t atBest = 0;
  auto below = negInf;
  for (size_t i = 0; i < n; i += L) {
    const auto v = i + L <= n ? hn::LoadU(d, c + i) : LoadPadded(d, c + i, n - i, -HUGE_VAL);
    const auto eq = hn::Eq(v, bv);
    atBest += hn::CountTrue(d, eq);
    below = hn::Max(below, hn::IfThenElse(eq, negInf, v));
  }
  const double second = atBest >= 2 ? b : hn::GetLane(hn::MaxOfLanes(d, below));
  return {b, second, hn::GetLane(hn::MaxOfLanes(d, rad))};
}

int32_t CountBeatingImpl(const float* x, size_t E, int32_t w) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const size_t L = hn::Lanes(d);
  const float xw = x[w];
  const auto vw = hn::Set(d, xw);
  const auto iw = hn::Set(di, w);
  auto idx = hn::Iota(di, 0);
  const auto step = hn::Set(di, static_cast<int32_t>(L));
  size_t count = 0;
  size_t i = 0;
  for (; i + L <= E; i += L) {
    const auto v = hn::LoadU(d, x + i);
    const auto lower = hn::RebindMask(d, hn::Lt(idx, iw));
    count += hn::CountTrue(d, hn::Or(hn::Gt(v, vw), hn::And(hn::Eq(v, vw), lower)));
    idx = hn::Add(idx, step);
  }
  for (; i < E; ++i) {
    count += (x[i] > xw || (x[i] == xw && static_cast<int32_t>(i) < w)) ? 1 : 0;
  }
  return static_cast<int32_t>(count);
}

// exp(-t) on one vector: k = round(-t / ln 2), r = -t - k ln 2 in two steps, p = Taylor polynomial
// of degree 13 at r by Horner, times 2^k built in the exponent field. -t is clamped to [-700, 700]
// first; the lanes outside are set to 0 or +inf after.
template <class D, class V>
HWY_INLINE V ExpNegVec(D d, V t) {
  const hn::RebindToUnsigned<D> du;
  const auto a = hn::Neg(t);
  const auto lo = hn::Set(d, -700.0), hi = hn::Set(d, 700.0);
  const auto ac = hn::Min(hn::Max(a, lo), hi);
  const auto k = hn::Round(hn::Mul(ac, hn::Set(d, 1.4426950408889634)));
  // ln 2 = kLn2Hi + kLn2Lo + 1.0e-28: kLn2Hi has 37 significant bits, so k kLn2Hi is exact.
  constexpr double kLn2Hi = 0x1.62e42fefa0000p-1;
  constexpr double kLn2Lo = 0x1.cf79abc9e3b3ap-40;
  auto r = hn::Sub(ac, hn::Mul(k, hn::Set(d, kLn2Hi)));
  r = hn::Sub(r, hn::Mul(k, hn::Set(d, kLn2Lo)));
  // 1/13!, ..., 1/1!, 1: each rounded to binary64 once.
  constexpr double kC[] = {1.0 / 6227020800.0,
                           1.0 / 479001600.0,
                           1.0 / 39916800.0,
                           1.0 / 3628800.0,
                           1.0 / 362880.0,
                           1.0 / 40320.0,
                           1.0 / 5040.0,
                           1.0 / 720.0,
                           1.0 / 120.0,
                           1.0 / 24.0,
                           1.0 / 6.0,
                           0.5,
                           1.0,
                           1.0};
  auto p = hn::Set(d, kC[0]);
#pragma GCC unroll 16
  for (size_t i = 1; i < sizeof(kC) / sizeof(kC[0]); ++i) p = hn::MulAdd(p, r, hn::Set(d, kC[i]));
  // 2^k: k + 2^52 + 2^51 holds k in its low bits; k + 1023 shifted into the exponent.
  const auto magic = hn::Set(d, 0x1.8p52);
  const auto kBits = hn::Sub(hn::BitCast(du, hn::Add(k, magic)), hn::BitCast(du, magic));
  const auto scale = hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(kBits, hn::Set(du, uint64_t{1023}))));
  auto e = hn::Mul(p, scale);
  e = hn::IfThenZeroElse(hn::Lt(a, lo), e);
  e = hn::IfThenElse(hn::Gt(a, hi), hn::Set(d, std::numeric_limits<double>::infinity()), e);
  return e;
}

void ExpNegImpl(const double* t, double* out, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(ExpNegVec(d, hn::LoadU(d, t + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN double buf[HWY_MAX_BYTES / sizeof(double)] = {};
    std::memcpy(buf, t + i, (n - i) * sizeof(double));
    hn::Store(ExpNegVec(d, hn::Load(d, buf)), d, buf);
    std::memcpy(out + i, buf, (n - i) * sizeof(double));
  }
}

// One vector of sigmoid scores (first_level_simd.hpp's sigmoidScores); the lanes whose x
// is NaN are added to `nan`.
template <class D, class M>
HWY_INLINE void SigmoidVec(D d, const float* x, double* t, double* s, double* serr, M& nan) {
  const hn::Rebind<float, D> df;
  const auto xv = hn::PromoteTo(d, hn::LoadU(df, x));
  nan = hn::Or(nan, hn::IsNaN(xv));
  const auto one = hn::Set(d, 1.0);
  const auto sv = hn::Div(one, hn::Add(one, ExpNegVec(d, xv)));
  hn::StoreU(xv, d, t);
  hn::StoreU(sv, d, s);
  hn::StoreU(hn::Add(hn::Mul(sv, hn::Set(d, kExpRel + 0x1p-51)), hn::Set(d, kExpAbs)), d, serr);
}

bool SigmoidScoresImpl(const float* x, double* t, double* s, double* serr, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  auto nan = hn::FirstN(d, 0);
  size_t i = 0;
  for (; i + L <= n; i += L) SigmoidVec(d, x + i, t + i, s + i, serr + i, nan);
  if (i < n) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(double);
    float xb[kMax] = {};
    HWY_ALIGN double tb[kMax], sb[kMax], eb[kMax];
    std::memcpy(xb, x + i, (n - i) * sizeof(float));
    SigmoidVec(d, xb, tb, sb, eb, nan);
    std::memcpy(t + i, tb, (n - i) * sizeof(double));
    std::memcpy(s + i, sb, (n - i) * sizeof(double));
    std::memcpy(serr + i, eb, (n - i) * sizeof(double));
  }
  return !hn::AllFalse(d, nan);
}

// One vector of keys and radii (first_level_simd.hpp's keyBands): the formulas of
// docs/fuzz.md in the order first_level_family.cpp states them.
template <class D>
HWY_INLINE void KeyVec(D d, const KeyRow& in, size_t E, const double* t, const double* s,
                       const double* serr, const float* bias, double* c, double* radius) {
  const hn::Rebind<float, D> df;
  const bool hasBias = bias != nullptr;
  const auto sv = hn::LoadU(d, s), ev = hn::LoadU(d, serr);
  const auto b = hasBias ? hn::PromoteTo(d, hn::LoadU(df, bias)) : hn::Zero(d);
  const auto cv = hn::Add(sv, b);
  const auto ac = hn::Abs(cv);
  const auto cerr = hasBias ? hn::Add(ev, hn::Mul(ac, hn::Set(d, 0x1p-53))) : ev;
  const auto sUp = hn::Add(sv, ev), cUp = hn::Add(ac, cerr);
  const double twoE = 2.0 * static_cast<double>(E);
  auto sh = hn::Zero(d);
  if (in.score == ScoreFunction::kSoftmax) {
    const auto tv = hn::LoadU(d, t);
    sh = hn::IfThenElseZero(hn::Lt(hn::Abs(tv), hn::Set(d, HUGE_VAL)), tv);
  }
  auto ladderErr =
      in.score == ScoreFunction::kSoftmax
          ? hn::Mul(hn::Mul(sUp, hn::Add(hn::Add(sh, hn::Set(d, twoE)), hn::Set(d, 8.0))),
                    hn::Set(d, 0x1p-52))
          : hn::Mul(sUp, hn::Set(d, 0x1p-50));
  ladderErr = hn::Add(ladderErr, hn::Set(d, kAbsNormal));
  if (hasBias) ladderErr = hn::Add(ladderErr, hn::Mul(cUp, hn::Set(d, 0x1p-52)));
  const auto r =
      hn::Add(hn::Add(cerr, hn::Mul(hn::Set(d, 2.0), ladderErr)), hn::Mul(ac, hn::Set(d, 0x1p-51)));
  hn::StoreU(cv, d, c);
  hn::StoreU(hn::Mul(r, hn::Set(d, 1 + 0x1p-20)), d, radius);
}

void KeyBandsImpl(const KeyRow& in, double* c, double* radius) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d), n = in.s.size();
  const bool hasBias = !in.bias.empty();
  const double* t = in.score == ScoreFunction::kSoftmax ? in.t.data() : nullptr;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    KeyVec(d, in, n, t ? t + i : nullptr, in.s.data() + i, in.serr.data() + i,
           hasBias ? in.bias.data() + i : nullptr, c + i, radius + i);
  }
  if (i < n) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(double);
    const size_t m = n - i;
    float bb[kMax] = {};
    HWY_ALIGN double tb[kMax] = {}, sb[kMax] = {}, eb[kMax] = {}, cb[kMax], rb[kMax];
    if (t) std::memcpy(tb, t + i, m * sizeof(double));
    std::memcpy(sb, in.s.data() + i, m * sizeof(double));
    std::memcpy(eb, in.serr.data() + i, m * sizeof(double));
    if (hasBias) std::memcpy(bb, in.bias.data() + i, m * sizeof(float));
    KeyVec(d, in, n, t ? tb : nullptr, sb, eb, hasBias ? bb : nullptr, cb, rb);
    std::memcpy(c + i, cb, m * sizeof(double));
    std::memcpy(radius + i, rb, m * sizeof(double));
  }
}

// float_bits.hpp's ulp32 on a vector of x >= 0 (or -0): binary32's spacing at x, doubled
// where x rounds to binary32 at the next binade's bottom; 2^-149 below 2^-126.
template <class D, class V>
V Ulp32Vec(D d, V x) {
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<float, D> df;
  const auto biased = hn::ShiftRight<52>(hn::BitCast(du, x));
  auto spacing = hn::BitCast(d, hn::ShiftLeft<52>(hn::Sub(biased, hn::Set(du, uint64_t{23}))));
  const auto nextBinade =
      hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(biased, hn::Set(du, uint64_t{1}))));
  const auto rounded = hn::PromoteTo(d, hn::DemoteTo(df, x));
  spacing = hn::IfThenElse(hn::Ge(rounded, nextBinade), hn::Add(spacing, spacing), spacing);
  spacing = hn::IfThenElse(hn::Gt(x, hn::Set(d, 0x1.fffffep127)), hn::Set(d, 0x1p104), spacing);
  return hn::IfThenElse(hn::Ge(x, hn::Set(d, 0x1p-126)), spacing, hn::Set(d, 0x1p-149));
}

// A mask's lanes as bytes, branch-free: ok[i] = 0 where lane i is false, else left as it is
// (ClearUnmarked, for the L lanes); ok[i] = lane i (WriteMarks, for the first `count`).
template <class D, class M>
HWY_INLINE void ClearUnmarked(D d, M mask, uint8_t* ok) {
  uint8_t bits[8] = {};
  hn::StoreMaskBits(d, mask, bits);
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    ok[i] = static_cast<uint8_t>(ok[i] & -((bits[i / 8] >> (i % 8)) & 1));
  }
}
template <class D, class M>
HWY_INLINE void WriteMarks(D d, M mask, size_t count, uint8_t* ok) {
  uint8_t bits[8] = {};
  hn::StoreMaskBits(d, mask, bits);
  for (size_t i = 0; i < count; ++i) ok[i] = static_cast<uint8_t>((bits[i / 8] >> (i % 8)) & 1);
}

// first_level_token.cpp's gatesWithin with one token per lane: the same operations in the
// same order (no contraction: -ffp-contract=off), so each lane decides as decideToken does.
void GatesWithinBatchImpl(const GateBatch& b) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const size_t L = hn::Lanes(d), n = static_cast<size_t>(b.n);
  const double c = b.expUlp;
  const auto zero = hn::Zero(d);
  const auto expRel = hn::Set(d, kExpRel), expAbs = hn::Set(d, kExpAbs);
  const auto tRound = hn::Set(d, 0x1p-52), safety = hn::Set(d, kSafety);
  const auto floorConst = hn::Set(d, (b.experts + 1.0) * (b.n + 1.0) * (c + 2) * kTiny32);
  // Every exp of the block first, independent of each other, so that their polynomials'
  // chains overlap.
  for (size_t at = 0; at < n * kBatchTokens; at += L) {
    hn::StoreU(ExpNegVec(d, hn::LoadU(d, b.t + at)), d, b.p + at);
  }
  for (size_t lane = 0; lane < static_cast<size_t>(kBatchTokens); lane += L) {
    auto sum = zero, sumErr = zero;
    for (size_t s = 0; s < n; ++s) {
      const size_t at = s * kBatchTokens + lane;
      const auto t = hn::LoadU(d, b.t + at);
      const auto P = hn::LoadU(d, b.p + at);
      sum = hn::Add(sum, P);
      const auto own = hn::Mul(P, hn::Add(expRel, hn::Mul(t, tRound)));
      sumErr = hn::Add(hn::Add(sumErr, hn::IfThenElseZero(hn::Gt(P, zero), own)), expAbs);
    }
    sumErr = hn::Add(sumErr, hn::Mul(hn::Set(d, (b.n + 1) * 0x1p-53), sum));
    const auto sumRel = hn::Div(sumErr, sum);
    auto weighted = zero;
    for (size_t s = 0; s < n; ++s) {
      const size_t at = s * kBatchTokens + lane;
      // G = P / sum, kept in p for the budgets below (G > 0 iff P > 0: P is 0 or at least
      // 2^-1011, the sum at most 33).
      const auto G = hn::Div(hn::LoadU(d, b.p + at), sum);
      hn::StoreU(G, d, b.p + at);
      const auto term = hn::Mul(G, hn::LoadU(d, b.shift + at));
      weighted = hn::Add(weighted, hn::IfThenElseZero(hn::Gt(G, zero), term));
    }
    weighted = hn::Mul(weighted, safety);
    auto within = hn::Eq(zero, zero);
    for (size_t s = 0; s < n; ++s) {
      const size_t at = s * kBatchTokens + lane;
      const auto G = hn::LoadU(d, b.p + at), t = hn::LoadU(d, b.t + at);
      const auto ownRel = hn::IfThenElseZero(hn::Gt(G, zero), hn::Add(expRel, hn::Mul(t, tRound)));
      const auto rel =
          hn::Add(hn::Add(ownRel, hn::Mul(hn::Set(d, 2.0), sumRel)), hn::Set(d, 0x1p-50));
      const auto err = hn::Add(hn::Mul(G, rel), hn::Set(d, 2 * kExpAbs));
      const auto lo = hn::Max(hn::Sub(G, err), zero), hi = hn::Add(G, err);
      const auto g = hn::PromoteTo(d, hn::LoadU(df, b.g + at));
      const auto devHi = hn::Max(hn::Abs(hn::Sub(g, lo)), hn::Abs(hn::Sub(g, hi)));
      auto budget = hn::Mul(hn::Set(d, b.gateUlp), Ulp32Vec(d, lo));
      if (b.analyticFloor) {
        // verdict.hpp's gateFloor(lo, shiftE, weighted, n, E, c), term by term.
        auto f = hn::Add(hn::Add(hn::LoadU(d, b.shift + at), weighted), hn::Set(d, 2.0 * b.n));
        f = hn::Add(hn::Add(f, hn::Set(d, 4 * c)), hn::Set(d, 8.0));
        const auto relative =
            hn::IfThenElseZero(hn::Gt(lo, zero), hn::Mul(hn::Mul(f, hn::Set(d, kU32)), lo));
        budget = hn::Add(budget, hn::Add(relative, floorConst));
      }
      within = hn::And(within, hn::Le(devHi, hn::Mul(budget, safety)));
    }
    ClearUnmarked(d, within, b.ok + lane);
  }
}

// The vector fast paths below use 128-bit blocks of 256-bit vectors (x86 AVX-512 targets,
// where a lane of doubles per token makes a vector of 8 floats).
#undef MOE_FIRST_LEVEL_BLOCKS
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define MOE_FIRST_LEVEL_BLOCKS 1
#else
#define MOE_FIRST_LEVEL_BLOCKS 0
#endif

#if MOE_FIRST_LEVEL_BLOCKS
// Four rows' 128-bit blocks transposed: block b of out k holds logit 4 b + k of the four.
template <class DF, class V>
HWY_INLINE void Transpose4(DF df, V r0, V r1, V r2, V r3, V& o0, V& o1, V& o2, V& o3) {
  const hn::Repartition<uint64_t, DF> d64;
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(df, r0, r1));
  const auto t1 = hn::BitCast(d64, hn::InterleaveUpper(df, r0, r1));
  const auto t2 = hn::BitCast(d64, hn::InterleaveLower(df, r2, r3));
  const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(df, r2, r3));
  o0 = hn::BitCast(df, hn::InterleaveLower(d64, t0, t2));
  o1 = hn::BitCast(df, hn::InterleaveUpper(d64, t0, t2));
  o2 = hn::BitCast(df, hn::InterleaveLower(d64, t1, t3));
  o3 = hn::BitCast(df, hn::InterleaveUpper(d64, t1, t3));
}

// An 8 x 8 tile of logits (8 tokens' rows at x, `stride` apart) transposed in registers:
// col[j] holds logit j of the 8 tokens. Pairs interleaved as floats, then as 64-bit pairs
// (within each 128-bit block), then the blocks' halves joined.
template <class DF>
HWY_INLINE void Transpose8x8(DF df, const float* x, size_t stride, hn::Vec<DF> (&col)[8]) {
  hn::Vec<DF> a0, a1, a2, a3, b0, b1, b2, b3;
  Transpose4(df, hn::LoadU(df, x), hn::LoadU(df, x + stride), hn::LoadU(df, x + 2 * stride),
             hn::LoadU(df, x + 3 * stride), a0, a1, a2, a3);
  Transpose4(df, hn::LoadU(df, x + 4 * stride), hn::LoadU(df, x + 5 * stride),
             hn::LoadU(df, x + 6 * stride), hn::LoadU(df, x + 7 * stride), b0, b1, b2, b3);
  col[0] = hn::ConcatLowerLower(df, b0, a0);
  col[1] = hn::ConcatLowerLower(df, b1, a1);
  col[2] = hn::ConcatLowerLower(df, b2, a2);
  col[3] = hn::ConcatLowerLower(df, b3, a3);
  col[4] = hn::ConcatUpperUpper(df, b0, a0);
  col[5] = hn::ConcatUpperUpper(df, b1, a1);
  col[6] = hn::ConcatUpperUpper(df, b2, a2);
  col[7] = hn::ConcatUpperUpper(df, b3, a3);
}
#endif

// A block's rows transposed: row + j L holds logit j of each lane's token (the lanes past
// `lanes` repeat the first token). In registers for whole blocks of 8 tokens and E a
// multiple of 8, else by plain copies (cheaper than a gather a logit).
template <class DF>
HWY_INLINE void TransposeRows(DF df, const float* x, int32_t E, int32_t lanes, float* row) {
  const size_t L = hn::Lanes(df);
#if MOE_FIRST_LEVEL_BLOCKS
  if (L == 8 && lanes == 8 && E % 8 == 0) {
    for (int32_t j0 = 0; j0 < E; j0 += 8) {
      hn::Vec<DF> col[8];
      Transpose8x8(df, x + j0, static_cast<size_t>(E), col);
      for (size_t k = 0; k < 8; ++k) {
        hn::Store(col[k], df, row + (static_cast<size_t>(j0) + k) * 8);
      }
    }
    return;
  }
#endif
  for (int32_t i = 0; i < static_cast<int32_t>(L); ++i) {
    const float* xi = x + static_cast<size_t>(i < lanes ? i : 0) * static_cast<size_t>(E);
    for (int32_t j = 0; j < E; ++j)
      row[static_cast<size_t>(j) * L + static_cast<size_t>(i)] = xi[j];
  }
}

// Slot s of each lane's token from a block's token-major slots (n a token, slotAt = n times
// the lane, 0 past the block): one load for n = 1, two loads split into even and odd lanes
// for n = 2 in a whole block, else a gather.
template <class D, class VI, typename T>
HWY_INLINE hn::Vec<D> SlotOfLanes(D d, const T* p, int32_t n, int32_t s, bool whole, VI slotAt) {
#if MOE_FIRST_LEVEL_BLOCKS
  if (whole && n == 1) return hn::LoadU(d, p);
  if (whole && n == 2) {
    const auto lo = hn::LoadU(d, p), hi = hn::LoadU(d, p + hn::Lanes(d));
    return s == 0 ? hn::ConcatEven(d, hi, lo) : hn::ConcatOdd(d, hi, lo);
  }
#else
  (void)n, (void)whole;
#endif
  return hn::GatherIndex(d, p + s, slotAt);
}

// prepareBatch's work for one block of L tokens from `base`: the per-token checks of
// decideToken's moe_route_v1 path with the tokens across the lanes. kE = 8: a whole block
// of rows of 8, its columns kept in registers and each kept logit picked from them; kE = 0:
// any E, the columns in memory and the kept logits gathered from the rows.
template <int32_t kE>
HWY_INLINE void PrepareBlock(const TokenBlock& in, const GateBatch& b, int32_t base) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const hn::Rebind<int32_t, decltype(d)> di;
  using VF = hn::Vec<decltype(df)>;
  constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(double);
  const size_t L = hn::Lanes(d);
  const int32_t E = kE > 0 ? kE : b.experts, n = b.n;
  HWY_ALIGN float row[kE > 0 ? 1 : kVectorExperts * kMaxLanes];
  HWY_ALIGN float kept[kVectorExperts * kMaxLanes];
  HWY_ALIGN int32_t id[kVectorExperts * kMaxLanes];
  VF col[kE > 0 ? kE : 1];
  const auto oneI = hn::Set(di, 1);
  const auto lane = hn::Iota(di, 0);
  const auto valid = hn::Lt(lane, hn::Set(di, in.count - base));
  const auto tok = hn::IfThenElseZero(valid, lane);
  const auto rowAt = hn::Mul(tok, hn::Set(di, E)), slotAt = hn::Mul(tok, hn::Set(di, n));
  const float* x = in.x + static_cast<size_t>(base) * static_cast<size_t>(E);
  const int32_t* ids = in.ids + static_cast<size_t>(base) * static_cast<size_t>(n);
  const float* gates = in.gates + static_cast<size_t>(base) * static_cast<size_t>(n);
  auto ok = hn::RebindMask(df, valid);
  const int32_t lanes = std::min(static_cast<int32_t>(L), in.count - base);
  const bool whole = lanes == static_cast<int32_t>(L);
#if MOE_FIRST_LEVEL_BLOCKS
  if constexpr (kE == 8) Transpose8x8(df, x, 8, col);
#endif
  if constexpr (kE == 0) TransposeRows(df, x, E, lanes, row);
  const auto column = [&](int32_t j) HWY_ATTR {
    if constexpr (kE > 0) return col[j];
    return hn::Load(df, row + static_cast<size_t>(j) * L);
  };
  auto m = column(0);
#pragma GCC unroll 8
  for (int32_t j = 0; j < E; ++j) {
    const auto v = column(j);
    ok = hn::And(ok, hn::Le(hn::Abs(v), hn::Set(df, std::numeric_limits<float>::max())));
    m = hn::IfThenElse(hn::Lt(m, v), v, m);
  }
  auto seen = hn::Zero(di);
  for (int32_t s = 0; s < n; ++s) {
    const auto v = SlotOfLanes(di, ids, n, s, whole, slotAt);
    const auto inRange = hn::And(hn::Gt(v, hn::Set(di, -1)), hn::Lt(v, hn::Set(di, E)));
    const auto idc = hn::IfThenElseZero(inRange, v);
    const auto bit = hn::Shl(oneI, idc);
    const auto fresh = hn::Eq(hn::And(seen, bit), hn::Zero(di));
    seen = hn::Or(seen, bit);
    ok = hn::And(ok, hn::RebindMask(df, hn::And(inRange, fresh)));
    const auto g = SlotOfLanes(df, gates, n, s, whole, slotAt);
    ok = hn::And(ok, hn::And(hn::Le(hn::Abs(g), hn::Set(df, std::numeric_limits<float>::max())),
                             hn::Ge(g, hn::Zero(df))));
    hn::Store(idc, di, id + static_cast<size_t>(s) * L);
    if constexpr (kE > 0) {
      auto xe = col[0];
#pragma GCC unroll 8
      for (int32_t j = 1; j < kE; ++j) {
        xe = hn::IfThenElse(hn::RebindMask(df, hn::Eq(idc, hn::Set(di, j))), col[j], xe);
      }
      hn::Store(xe, df, kept + static_cast<size_t>(s) * L);
    } else {
      hn::Store(hn::GatherIndex(df, x, hn::Add(rowAt, idc)), df, kept + static_cast<size_t>(s) * L);
    }
    hn::StoreU(g, df, b.g + static_cast<size_t>(s) * kBatchTokens + static_cast<size_t>(base));
  }
  // The worst of the kept set: the one every other kept expert beats.
  auto wx = hn::Load(df, kept), mS = wx;
  auto wi = hn::Load(di, id);
  for (int32_t s = 1; s < n; ++s) {
    const auto v = hn::Load(df, kept + static_cast<size_t>(s) * L);
    const auto i = hn::Load(di, id + static_cast<size_t>(s) * L);
    const auto worse =
        hn::Or(hn::Gt(wx, v), hn::And(hn::Eq(wx, v), hn::RebindMask(df, hn::Lt(wi, i))));
    wx = hn::IfThenElse(worse, v, wx);
    wi = hn::IfThenElse(hn::RebindMask(di, worse), i, wi);
    mS = hn::IfThenElse(hn::Lt(mS, v), v, mS);
  }
  auto beating = hn::Zero(di);
#pragma GCC unroll 8
  for (int32_t j = 0; j < E; ++j) {
    const auto v = column(j);
    const auto beats = hn::Or(
        hn::Gt(v, wx), hn::And(hn::Eq(v, wx), hn::RebindMask(df, hn::Lt(hn::Set(di, j), wi))));
    beating = hn::Add(beating, hn::IfThenElseZero(hn::RebindMask(di, beats), oneI));
  }
  ok = hn::And(ok, hn::RebindMask(df, hn::Eq(beating, hn::Set(di, n - 1))));
  if (in.rank) {
    for (int32_t s = 0; s + 1 < n; ++s) {
      const auto a = hn::Load(df, kept + static_cast<size_t>(s) * L);
      const auto c = hn::Load(df, kept + static_cast<size_t>(s + 1) * L);
      const auto ia = hn::Load(di, id + static_cast<size_t>(s) * L);
      const auto ic = hn::Load(di, id + static_cast<size_t>(s + 1) * L);
      ok = hn::And(ok,
                   hn::Or(hn::Gt(a, c), hn::And(hn::Eq(a, c), hn::RebindMask(df, hn::Lt(ia, ic)))));
    }
  }
  const auto okF = hn::IfThenElseZero(ok, hn::Set(df, 1.0f));
  const auto okD = hn::Gt(hn::PromoteTo(d, okF), hn::Zero(d));
  const auto mD = hn::PromoteTo(d, m), mSD = hn::PromoteTo(d, mS);
  for (int32_t s = 0; s < n; ++s) {
    const size_t at = static_cast<size_t>(s) * kBatchTokens + static_cast<size_t>(base);
    const auto xe = hn::PromoteTo(d, hn::Load(df, kept + static_cast<size_t>(s) * L));
    hn::StoreU(hn::IfThenElseZero(okD, hn::Sub(mSD, xe)), d, b.t + at);
    hn::StoreU(hn::IfThenElseZero(okD, hn::Sub(mD, xe)), d, b.shift + at);
    hn::StoreU(hn::IfThenElseZero(ok, hn::LoadU(df, b.g + at)), df, b.g + at);
  }
  WriteMarks(df, ok, static_cast<size_t>(lanes), b.ok + base);
}

// prepareBatch (first_level_simd.hpp): the blocks of L tokens, whole blocks of rows of 8
// from registers.
void PrepareBatchImpl(const TokenBlock& in, const GateBatch& b) {
  const hn::ScalableTag<double> d;
  const int32_t L = static_cast<int32_t>(hn::Lanes(d));
  for (int32_t base = 0; base < in.count; base += L) {
#if MOE_FIRST_LEVEL_BLOCKS
    if (L == 8 && b.experts == 8 && in.count - base >= L) {
      PrepareBlock<8>(in, b, base);
      continue;
    }
#endif
    PrepareBlock<0>(in, b, base);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace moe::fuzz::first
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::fuzz::first {

HWY_EXPORT(ScanRowImpl);
HWY_EXPORT(CountBeatingImpl);
HWY_EXPORT(ExpNegImpl);
HWY_EXPORT(AnyMarkedImpl);
HWY_EXPORT(CountNotBelowImpl);
HWY_EXPORT(GroupTopImpl);
HWY_EXPORT(SigmoidScoresImpl);
HWY_EXPORT(KeyBandsImpl);
HWY_EXPORT(GatesWithinBatchImpl);
HWY_EXPORT(PrepareBatchImpl);

RowScan scanRow(std::span<const float> x) {
  if (x.empty()) return {};
  return HWY_DYNAMIC_DISPATCH(ScanRowImpl)(x.data(), x.size());
}

int32_t countBeating(std::span<const float> x, int32_t w) {
  return HWY_DYNAMIC_DISPATCH(CountBeatingImpl)(x.data(), x.size(), w);
}

void expNeg(std::span<const double> t, std::span<double> out) {
  HWY_DYNAMIC_DISPATCH(ExpNegImpl)(t.data(), out.data(), t.size());
}

size_t countNotBelow(std::span<const double> c, std::span<const double> radius, double threshold) {
  return HWY_DYNAMIC_DISPATCH(CountNotBelowImpl)(c.data(), radius.data(), c.size(), threshold);
}

GroupTop groupTop(std::span<const double> c, std::span<const double> radius) {
  return HWY_DYNAMIC_DISPATCH(GroupTopImpl)(c.data(), radius.data(), c.size());
}

bool allFinite(std::span<const float> x) {
  return !HWY_DYNAMIC_DISPATCH(AnyMarkedImpl)(x.data(), x.size(), false);
}

bool sigmoidScores(std::span<const float> x, std::span<double> t, std::span<double> s,
                   std::span<double> serr) {
  return HWY_DYNAMIC_DISPATCH(SigmoidScoresImpl)(x.data(), t.data(), s.data(), serr.data(),
                                                 x.size());
}

void keyBands(const KeyRow& in, std::span<double> c, std::span<double> radius) {
  HWY_DYNAMIC_DISPATCH(KeyBandsImpl)(in, c.data(), radius.data());
}

void gatesWithinBatch(const GateBatch& b) {
  HWY_DYNAMIC_DISPATCH(GatesWithinBatchImpl)(b);
}

void prepareBatch(const TokenBlock& in, const GateBatch& b) {
  HWY_DYNAMIC_DISPATCH(PrepareBatchImpl)(in, b);
}

}  // namespace moe::fuzz::first
#endif
