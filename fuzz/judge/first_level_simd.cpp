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

}  // namespace HWY_NAMESPACE
}  // namespace moe::fuzz::first
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::fuzz::first {

HWY_EXPORT(ScanRowImpl);
HWY_EXPORT(CountBeatingImpl);
HWY_EXPORT(ExpNegImpl);

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

}  // namespace moe::fuzz::first
#endif
