// The first level for moe_route_v1 (first_level.hpp): structure, the kept set and the slot
// order by float comparisons (vector scans), then every gate within its budget by binary64
// with the bound of docs/fuzz.md ("The first level").
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "moe/fuzz/first_level.hpp"
#include "moe/fuzz/first_level_simd.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "verdict_slots.hpp"

namespace moe::fuzz::first {

namespace {

bool beats(std::span<const float> x, int32_t j, int32_t i) {
  return x[j] > x[i] || (j < i && x[j] == x[i]);  // NaN-free rows only
}

// Every gate of the kept set S within its budget without the spec32 term (which only adds):
// the exact gate G_e = exp(x_e - mS) / sum_S exp(x_j - mS) is enclosed in [lo, hi] and
// max |g - G| over it must not exceed the budget at lo.
bool gatesWithin(std::span<const float> x, std::span<const int32_t> S, std::span<const float> gates,
                 float m, const Contract& contract, const VerdictConfig& config) {
  const auto n = static_cast<int32_t>(S.size());
  const auto E = static_cast<int32_t>(x.size());
  const double c = contract.expMaxUlp;
  const double U = config.gateUlp.value_or(contract.gateBudget.ulp);
  float mS = x[S[0]];
  for (int32_t e : S) mS = std::max(mS, x[e]);
  thread_local std::vector<double> t, P;
  t.resize(static_cast<size_t>(n));
  P.resize(static_cast<size_t>(n));
  for (int32_t s = 0; s < n; ++s) t[s] = static_cast<double>(mS) - static_cast<double>(x[S[s]]);
  expNeg(t, P);
  // P_s = exp(-t_s) within kExpRel + |t_s| 2^-52 (t_s's own rounding) relative, kExpAbs
  // absolute; the sum of n terms adds n 2^-53 of itself. The largest term is exp(0) = 1
  // exactly, so sum >= 1.
  double sum = 0, sumErr = 0;
  for (int32_t s = 0; s < n; ++s) {
    sum += P[s];
    if (P[s] > 0) sumErr += P[s] * (kExpRel + t[s] * 0x1p-52);
    sumErr += kExpAbs;
  }
  sumErr += (n + 1) * 0x1p-53 * sum;
  const double sumRel = sumErr / sum;
  double weighted = 0;  // sum_S G_j |x_j - m|, the floor's mean term
  for (int32_t s = 0; s < n; ++s) {
    const double shift = static_cast<double>(m) - static_cast<double>(x[S[s]]);
    if (std::isfinite(shift) && P[s] > 0) weighted += P[s] / sum * shift;
  }
  weighted *= kSafety;
  for (int32_t s = 0; s < n; ++s) {
    double shiftE = static_cast<double>(m) - static_cast<double>(x[S[s]]);
    if (!std::isfinite(shiftE)) shiftE = 0;
    const double G = P[s] / sum;
    const double ownRel = P[s] > 0 ? kExpRel + t[s] * 0x1p-52 : 0.0;
    const double err = G * (ownRel + 2 * sumRel + 0x1p-50) + 2 * kExpAbs;
    const double lo = std::max(G - err, 0.0), hi = G + err;
    const double g = gates[s];
    const double devHi = std::max(std::fabs(g - lo), std::fabs(g - hi));
    double budget = U * ulp32(lo);
    if (config.analyticFloor) budget += gateFloor(lo, shiftE, weighted, n, E, c);
    if (!(devHi <= budget * kSafety)) return false;
  }
  return true;
}

}  // namespace

Decided decideToken(std::span<const float> x, int32_t k, std::span<const int32_t> ids,
                    std::span<const float> gates, const Contract& contract,
                    const VerdictConfig& config) {
  thread_local std::vector<uint8_t> seen;
  const auto E = static_cast<int32_t>(x.size());
  const int32_t n = std::min(k, E);
  const RowScan row = scanRow(x);
  if (checkSlots(E, k, {n, "min(k, E)", ""}, ids, gates, row.real, true, seen)) {
    return Decided::kNo;  // a structure violation: the ladder writes its certificate
  }
  if (E == 0 || (row.real && n == 0)) return Decided::kExact;
  if (!row.real) return Decided::kNonrealRow;
  const std::span<const int32_t> S = ids.first(static_cast<size_t>(n));
  // The spec's kept set iff nothing outside S beats S's worst member: all n - 1 others in S
  // beat it, so exactly n - 1 experts of the row do.
  int32_t worst = S[0];
  for (int32_t e : S) {
    if (beats(x, worst, e)) worst = e;
  }
  if (countBeating(x, worst) != n - 1) return Decided::kNo;
  if (contract.slotOrder == SlotOrder::kRank) {
    for (int32_t s = 0; s + 1 < n; ++s) {
      if (!beats(x, S[s], S[s + 1])) return Decided::kNo;
    }
  }
  if (!gatesWithin(x, S, gates.first(static_cast<size_t>(n)), row.max, contract, config)) {
    return Decided::kNo;
  }
  return Decided::kExact;
}

}  // namespace moe::fuzz::first
