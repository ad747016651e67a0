// The fused layer's reference and budget (docs/fuzz.md "The fused layer", where each term
// below is derived). Everything is evaluated in binary64: the reference's own error and the
// budget's rounding are the same bound at binary64's unit, below 2^-28 of the binary32
// budget, and kSlack covers them.
#include <algorithm>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/layer_verdict.hpp"

namespace moe::fuzz {

namespace {

// gamma_n = n u / (1 - n u): the relative error bound of an n-term binary32 sum of
// products in any order (Higham, Lemma 3.1 and section 3.1).
double gamma32(double n) {
  return n * kU32 / (1.0 - n * kU32);
}

// |silu'(z)| <= 1.0998 for every real z: an argument error da moves silu by at most 1.1 da.
constexpr double kSiluSlope = 1.1;
// Below this argument exp(-a) may overflow binary32 (e^88.7) or make a subnormal sigmoid:
// the kernel's SiLU may then be anything between 0 and its value.
constexpr double kSiluLost = -80.0;
// A magnitude past this may overflow binary32 somewhere in the evaluation.
constexpr double kSafeMagnitude = 0x1p126;

}  // namespace

ExpertTerms expertTerms(const LayerCase& c, int32_t t, int32_t e, double siluUlp) {
  const int32_t H = c.hidden, I = c.intermediate;
  const auto x = c.xRow(t);
  const double u = kU32, eta = kTiny32;
  const double gH = gamma32(H);
  std::vector<double> h(static_cast<size_t>(I)), dh(static_cast<size_t>(I));
  ExpertTerms out;
  for (int32_t j = 0; j < I; ++j) {
    const float* w1 = c.w1Row(e, j);
    const float* w3 = c.w3Row(e, j);
    double a = 0, A = 0, b = 0, B = 0;
    for (int32_t i = 0; i < H; ++i) {
      const double p1 = static_cast<double>(w1[i]) * x[i], p3 = static_cast<double>(w3[i]) * x[i];
      a += p1;
      A += std::fabs(p1);
      b += p3;
      B += std::fabs(p3);
    }
    // The binary32 dot products: |a^ - a| <= gamma_H A + H eta (eta: a product's
    // underflow), the same for b.
    const double da = gH * A + H * eta, db = gH * B + H * eta;
    const double s = a / (1.0 + std::exp(-a));
    // SiLU of a^: the argument's error through the slope, then the evaluation's own
    // (exp within c ulp, the add, the division or the reciprocal and product: (c + 3) u).
    double ds = kSiluSlope * da + (siluUlp + 3) * u * (std::fabs(s) + kSiluSlope * da) + 4 * eta;
    if (a - da < kSiluLost) ds = std::max(ds, std::fabs(s) + kSiluSlope * da);
    // h^ = fl(silu^ * b^): |h^ - h| <= |s| db + ds (|b| + db) + u (|s| + ds)(|b| + db) + eta.
    const double sMag = std::fabs(s) + ds, bMag = std::fabs(b) + db;
    h[j] = s * b;
    dh[j] = std::fabs(s) * db + ds * bMag + u * sMag * bMag + eta;
    if (!(A < kSafeMagnitude && B < kSafeMagnitude && sMag * bMag < kSafeMagnitude)) {
      out.overflow = true;
    }
  }
  out.f.assign(static_cast<size_t>(H), 0.0);
  out.mag.assign(static_cast<size_t>(H), 0.0);
  out.dev.assign(static_cast<size_t>(H), 0.0);
  out.carriers.assign(static_cast<size_t>(H), 0.0);
  for (int32_t cc = 0; cc < H; ++cc) {
    const float* w2 = c.w2Row(e, cc);
    double f = 0, mag = 0, dev = 0, carriers = 0;
    for (int32_t j = 0; j < I; ++j) {
      const double w = std::fabs(static_cast<double>(w2[j]));
      f += static_cast<double>(w2[j]) * h[j];
      mag += w * (std::fabs(h[j]) + dh[j]);
      dev += w * dh[j];
      carriers += w + std::fabs(h[j]) + dh[j];
    }
    out.f[cc] = f;
    out.mag[cc] = mag;
    out.dev[cc] = dev;
    out.carriers[cc] = carriers;
    if (!(mag < kSafeMagnitude)) out.overflow = true;
  }
  return out;
}

LayerReference combineReference(std::span<const int32_t> experts, std::span<const double> gates,
                                std::span<const ExpertTerms* const> terms,
                                std::span<const double> allowance, int32_t hidden,
                                int32_t intermediate, double factor) {
  LayerReference r;
  r.experts.assign(experts.begin(), experts.end());
  r.gates.assign(gates.begin(), gates.end());
  const auto H = static_cast<size_t>(hidden);
  r.ref.assign(H, 0.0);
  r.budget.assign(H, 0.0);
  // y_c = sum over slots s and hidden units j of g_s W2_cj h^_j: N = |S| I products of three
  // factors (two roundings each), summed in any order (N - 1 additions):
  // |y^ - sum g W2 h^| <= gamma_{N+1} sum |g W2 h^|, plus each h^'s own error through
  // |g W2|, plus the products' underflow: the second rounding's eta, and the first's carried
  // by the factor applied after it (g, W2 or h^, whichever the kernel applies last), at most
  // eta (1 + u) (|g| + |W2_cj| + |h^_j|), plus 2 eta each kept from before.
  const double N = static_cast<double>(experts.size()) * intermediate;
  const double gN = gamma32(N + 1);
  for (size_t s = 0; s < experts.size(); ++s) {
    const ExpertTerms& T = *terms[s];
    const double g = std::fabs(gates[s]);
    const double wide = g + (allowance.empty() ? 0.0 : allowance[s]);
    r.overflow = r.overflow || T.overflow;
    for (size_t cc = 0; cc < H; ++cc) {
      r.ref[cc] += gates[s] * T.f[cc];
      r.budget[cc] += wide * (T.dev[cc] + gN * T.mag[cc]);
      r.budget[cc] += kTiny32 * (1 + kU32) * (wide * intermediate + T.carriers[cc]);
      if (!allowance.empty()) r.budget[cc] += allowance[s] * T.mag[cc];
    }
  }
  // The reference's own binary64 error and the budget's rounding: below 2^-28 of it.
  constexpr double kSlack = 1.0 + 0x1p-18;
  for (size_t cc = 0; cc < H; ++cc) {
    r.budget[cc] = (factor * (r.budget[cc] + 2 * (N + 1) * kTiny32)) * kSlack;
    if (!(std::fabs(r.ref[cc]) + r.budget[cc] < kSafeMagnitude)) r.overflow = true;
  }
  return r;
}

}  // namespace moe::fuzz
