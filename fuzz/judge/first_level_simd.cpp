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

#include "moe/fuzz/first_level_simd.hpp"

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

GroupTop GroupTopImpl(const double* c, const double* radius, const double* beta, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  const auto negInf = hn::Set(d, -HUGE_VAL);
  auto best = negInf, rad = hn::Zero(d), bet = hn::Zero(d);
  for (size_t i = 0; i < n; i += L) {
    bet = hn::Max(bet, i + L <= n ? hn::LoadU(d, beta + i) : LoadPadded(d, beta + i, n - i, 0.0));
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
  return {b, second, hn::GetLane(hn::MaxOfLanes(d, rad)), hn::GetLane(hn::MaxOfLanes(d, bet))};
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
V ExpNegVec(D d, V t) {
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

// One vector of sigmoid scores (first_level_simd.hpp's sigmoidScores).
template <class D>
HWY_INLINE void SigmoidVec(D d, const float* x, double* t, double* s, double* serr) {
  const hn::Rebind<float, D> df;
  const auto xv = hn::PromoteTo(d, hn::LoadU(df, x));
  const auto one = hn::Set(d, 1.0);
  const auto sv = hn::Div(one, hn::Add(one, ExpNegVec(d, xv)));
  hn::StoreU(xv, d, t);
  hn::StoreU(sv, d, s);
  hn::StoreU(hn::Add(hn::Mul(sv, hn::Set(d, kExpRel + 0x1p-51)), hn::Set(d, kExpAbs)), d, serr);
}

void SigmoidScoresImpl(const float* x, double* t, double* s, double* serr, size_t n) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) SigmoidVec(d, x + i, t + i, s + i, serr + i);
  if (i < n) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(double);
    float xb[kMax] = {};
    HWY_ALIGN double tb[kMax], sb[kMax], eb[kMax];
    std::memcpy(xb, x + i, (n - i) * sizeof(float));
    SigmoidVec(d, xb, tb, sb, eb);
    std::memcpy(t + i, tb, (n - i) * sizeof(double));
    std::memcpy(s + i, sb, (n - i) * sizeof(double));
    std::memcpy(serr + i, eb, (n - i) * sizeof(double));
  }
}

// One vector of keys, radii and budgets (first_level_simd.hpp's keyBands): the formulas of
// docs/fuzz.md in the order first_level_family.cpp states them.
template <class D>
HWY_INLINE void KeyVec(D d, const KeyRow& in, size_t E, const double* t, const double* s,
                       const double* serr, const float* bias, double* c, double* radius,
                       double* beta) {
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
  if (in.score == 0) {
    const auto tv = hn::LoadU(d, t);
    sh = hn::IfThenElseZero(hn::Lt(hn::Abs(tv), hn::Set(d, HUGE_VAL)), tv);
  }
  auto ladderErr =
      in.score == 0 ? hn::Mul(hn::Mul(sUp, hn::Add(hn::Add(sh, hn::Set(d, twoE)), hn::Set(d, 8.0))),
                              hn::Set(d, 0x1p-52))
                    : hn::Mul(sUp, hn::Set(d, 0x1p-50));
  ladderErr = hn::Add(ladderErr, hn::Set(d, 0x1p-1022));
  if (hasBias) ladderErr = hn::Add(ladderErr, hn::Mul(cUp, hn::Set(d, 0x1p-52)));
  const auto r =
      hn::Add(hn::Add(cerr, hn::Mul(hn::Set(d, 2.0), ladderErr)), hn::Mul(ac, hn::Set(d, 0x1p-51)));
  const double cUlp = in.cUlp, u = 0x1p-24, tiny = 0x1p-149;
  auto bt = hn::Zero(d);
  if (in.score == 0) {
    const auto rel = hn::Mul(
        hn::Mul(
            hn::Add(hn::Add(hn::Add(sh, hn::Set(d, twoE)), hn::Set(d, 4 * cUlp)), hn::Set(d, 4.0)),
            hn::Set(d, u)),
        sUp);
    bt = hn::Add(hn::IfThenElseZero(hn::Gt(sUp, hn::Zero(d)), rel), hn::Set(d, (cUlp + 2) * tiny));
  } else {
    const auto small = hn::Lt(hn::Sub(sv, ev), hn::Set(d, 0x1p-125));
    bt = hn::Add(
        hn::Add(hn::Mul(hn::Set(d, (2 * cUlp + 4) * u), sUp), hn::Set(d, (cUlp + 2) * tiny)),
        hn::IfThenElseZero(small, hn::Set(d, 0x1p-126)));
  }
  if (hasBias) {
    bt = hn::Add(hn::Add(hn::Mul(bt, hn::Set(d, 1 + u)), hn::Mul(hn::Set(d, u), cUp)),
                 hn::Set(d, tiny));
  }
  bt = hn::Add(hn::Mul(bt, hn::Set(d, 1 + 0x1p-20)), hn::Set(d, 0x1p-1000));
  hn::StoreU(cv, d, c);
  hn::StoreU(hn::Mul(r, hn::Set(d, 1 + 0x1p-20)), d, radius);
  hn::StoreU(bt, d, beta);
}

void KeyBandsImpl(const KeyRow& in, double* c, double* radius, double* beta) {
  const hn::ScalableTag<double> d;
  const size_t L = hn::Lanes(d), n = in.s.size();
  const bool hasBias = !in.bias.empty();
  const double* t = in.score == 0 ? in.t.data() : nullptr;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    KeyVec(d, in, n, t ? t + i : nullptr, in.s.data() + i, in.serr.data() + i,
           hasBias ? in.bias.data() + i : nullptr, c + i, radius + i, beta + i);
  }
  if (i < n) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(double);
    const size_t m = n - i;
    float bb[kMax] = {};
    HWY_ALIGN double tb[kMax] = {}, sb[kMax] = {}, eb[kMax] = {}, cb[kMax], rb[kMax], betab[kMax];
    if (t) std::memcpy(tb, t + i, m * sizeof(double));
    std::memcpy(sb, in.s.data() + i, m * sizeof(double));
    std::memcpy(eb, in.serr.data() + i, m * sizeof(double));
    if (hasBias) std::memcpy(bb, in.bias.data() + i, m * sizeof(float));
    KeyVec(d, in, n, t ? tb : nullptr, sb, eb, hasBias ? bb : nullptr, cb, rb, betab);
    std::memcpy(c + i, cb, m * sizeof(double));
    std::memcpy(radius + i, rb, m * sizeof(double));
    std::memcpy(beta + i, betab, m * sizeof(double));
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

GroupTop groupTop(std::span<const double> c, std::span<const double> radius,
                  std::span<const double> beta) {
  return HWY_DYNAMIC_DISPATCH(GroupTopImpl)(c.data(), radius.data(), beta.data(), c.size());
}

bool anyNaN(std::span<const float> x) {
  return HWY_DYNAMIC_DISPATCH(AnyMarkedImpl)(x.data(), x.size(), true);
}

bool allFinite(std::span<const float> x) {
  return !HWY_DYNAMIC_DISPATCH(AnyMarkedImpl)(x.data(), x.size(), false);
}

void sigmoidScores(std::span<const float> x, std::span<double> t, std::span<double> s,
                   std::span<double> serr) {
  HWY_DYNAMIC_DISPATCH(SigmoidScoresImpl)(x.data(), t.data(), s.data(), serr.data(), x.size());
}

void keyBands(const KeyRow& in, std::span<double> c, std::span<double> radius,
              std::span<double> beta) {
  HWY_DYNAMIC_DISPATCH(KeyBandsImpl)(in, c.data(), radius.data(), beta.data());
}

}  // namespace moe::fuzz::first
#endif
