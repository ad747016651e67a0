// judgeToken: structure, selection, slot order and gates of one token (docs/design.md §3).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "budget_formulas.hpp"
#include "ladder.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"
#include "verdict_slots.hpp"

namespace moe::fuzz {

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::kExact:
      return "exact";
    case Outcome::kAcceptable:
      return "acceptable";
    default:
      return "violation";
  }
}

bool isRealRow(std::span<const float> x) {
  bool someAboveNegInf = false;
  for (float v : x) {
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) return false;
    if (v > -std::numeric_limits<float>::infinity()) someAboveNegInf = true;
  }
  return someAboveNegInf;
}

double probabilityBudget(double p, double absShift, int32_t experts, double c) {
  return probabilityBudgetOf<double>(p, absShift, experts, c);
}

double gateFloor(double G, double shiftE, double maxShiftS, int32_t n, int32_t experts, double c) {
  double relative = G > 0 ? (shiftE + maxShiftS + 2.0 * n + 4 * c + 8) * kU32 * G : 0.0;
  return relative + (experts + 1.0) * (n + 1.0) * (c + 2) * kTiny32;
}

namespace {

using oracle::certified::Certified;

// Lean's beats on the logits: j outranks i (exact ties to the lower index). The oracle's
// one definition of the rule (oracle/routing.hpp), not a copy of it.
bool beatsX(std::span<const float> x, int32_t j, int32_t i) {
  return oracle::beats(x, static_cast<std::size_t>(j), static_cast<std::size_t>(i));
}

std::string logitText(std::span<const float> x, int32_t i) {
  return fmt::format("x[{}] = {} ({})", i, decimal32(x[i]), hex32(x[i]));
}

// The row's probabilities in binary64 with a rigorous error bound: P_i = exp(x_i - m) has
// relative error <= (|x_i - m| 2^-53 + 2^-52) (argument rounding, then exp's < 1 ulp),
// the sum of E terms <= E 2^-53, the division 2^-53; rho_i bounds the total with slack.
// exp below 2^-1022 loses relative accuracy (its absolute error is < 2^-1074): the
// absolute term kAbs covers it.
struct DoubleProbabilities {
  float m = 0;
  std::vector<double> p, rho, shift;
  static constexpr double kAbs = kAbsNormal;

  explicit DoubleProbabilities(std::span<const float> x) : m(rowMax(x)) {
    const size_t E = x.size();
    p.resize(E);
    rho.resize(E);
    shift.resize(E);
    double D = 0;
    for (size_t i = 0; i < E; ++i) {
      if (x[i] == -std::numeric_limits<float>::infinity()) {
        p[i] = 0;
        shift[i] = std::numeric_limits<double>::infinity();
        continue;
      }
      shift[i] = static_cast<double>(m) - static_cast<double>(x[i]);
      p[i] = std::exp(-shift[i]);
      D += p[i];
    }
    for (size_t i = 0; i < E; ++i) {
      p[i] /= D;
      rho[i] = std::isinf(shift[i]) ? 0.0 : (shift[i] + 2.0 * E + 8) * 0x1p-52;
    }
  }
  double err(size_t i) const { return p[i] * rho[i] + kAbs; }
};

// Lazily computed certified probabilities for the few rows that need them.
struct CertifiedProbabilities {
  std::span<const float> x;
  std::optional<std::vector<Certified>> p;
  const Certified& at(size_t i) {
    if (!p) p = oracle::certified::softmaxEnclosure(x);
    return (*p)[i];
  }
};

// The one near-tie filter for probabilities: does every displaced j stay within the
// rounding budget of every kept i, p_j - p_i <= b_i + b_j? With H_i = p_i + b_i and
// L_j = p_j - b_j that is max_j L_j <= min_i H_i: a pair where i beats j has p_i >= p_j and
// holds anyway, so no pair needs to be enumerated (O(|kept| + |displaced|)). The binary64
// filter first (each H and L with its error), then MPFR enclosures (b is increasing in p,
// so it is evaluated at the interval ends). On kBeyond, (i, j) is a pair beyond its budget;
// otherwise the pair nearest to it.
struct NearTies {
  Decision decision;
  int32_t i, j;
};

NearTies judgeNearTies(std::span<const float> x, std::span<const int32_t> kept,
                       std::span<const int32_t> displaced, double c, const DoubleProbabilities& dp,
                       CertifiedProbabilities& cp, LevelCounters& levels) {
  if (kept.empty() || displaced.empty()) return {Decision::kWithin, -1, -1};
  const int32_t E = static_cast<int32_t>(x.size());
  // b's slope in p: its error from p's error. A -inf logit has p = 0 exactly (no slope).
  auto slope = [&](int32_t e) {
    return std::isfinite(dp.shift[e]) ? (dp.shift[e] + 2.0 * E + 4 * c + 4) * kU32 : 0.0;
  };
  auto b = [&](int32_t e, double p) { return probabilityBudget(p, dp.shift[e], E, c); };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double minHlo = kInf, minHhi = kInf, maxLhi = -kInf, maxLlo = -kInf;
  int32_t iStar = kept[0], jStar = displaced[0];
  for (int32_t i : kept) {
    const double H = dp.p[i] + b(i, dp.p[i]);
    const double err = dp.err(i) * (1 + slope(i)) + H * 0x1p-50;
    minHlo = std::min(minHlo, H - err);
    if (H + err < minHhi) {
      minHhi = H + err;
      iStar = i;
    }
  }
  for (int32_t j : displaced) {
    const double L = dp.p[j] - b(j, dp.p[j]);
    const double err = dp.err(j) * (1 + slope(j)) + std::fabs(L) * 0x1p-50 + kAbsNormal;
    maxLhi = std::max(maxLhi, L + err);
    if (L - err > maxLlo) {
      maxLlo = L - err;
      jStar = j;
    }
  }
  if (maxLhi <= minHlo) {
    ++levels.selectionDouble;
    return {Decision::kWithin, iStar, jStar};
  }
  if (maxLlo > minHhi) {
    ++levels.selectionDouble;
    return {Decision::kBeyond, iStar, jStar};
  }
  minHlo = minHhi = kInf;
  maxLhi = maxLlo = -kInf;
  for (int32_t i : kept) {
    const auto& pe = cp.at(i);
    const double lo = pe.range.lowerDouble(), hi = pe.range.upperDouble();
    minHlo = std::min(minHlo, down(lo + down(b(i, lo))));
    const double Hhi = up(hi + up(b(i, hi)));
    if (Hhi < minHhi) {
      minHhi = Hhi;
      iStar = i;
    }
  }
  for (int32_t j : displaced) {
    const auto& pe = cp.at(j);
    const double lo = pe.range.lowerDouble(), hi = pe.range.upperDouble();
    maxLhi = std::max(maxLhi, up(hi - down(b(j, lo))));
    const double Llo = down(lo - up(b(j, hi)));
    if (Llo > maxLlo) {
      maxLlo = Llo;
      jStar = j;
    }
  }
  if (maxLhi <= minHlo) {
    ++levels.selectionCertified;
    return {Decision::kWithin, iStar, jStar};
  }
  if (maxLlo > minHhi) {
    ++levels.selectionCertified;
    return {Decision::kBeyond, iStar, jStar};
  }
  ++levels.selectionUndecided;
  return {Decision::kUndecided, iStar, jStar};
}

// p_j - p_i against b_i + b_j in binary64, for a certificate and the margin.
struct PairJudgement {
  Decision decision;
  double diff;    // p_j - p_i (binary64 estimate)
  double budget;  // b_i + b_j
};

PairJudgement pairOf(Decision d, std::span<const float> x, int32_t i, int32_t j, double c,
                     const DoubleProbabilities& dp) {
  const auto E = static_cast<int32_t>(x.size());
  return {d, dp.p[j] - dp.p[i],
          probabilityBudget(dp.p[i], dp.shift[i], E, c) +
              probabilityBudget(dp.p[j], dp.shift[j], E, c)};
}

double marginOf(const PairJudgement& pj) {
  return pj.budget > 0 ? pj.diff / pj.budget : 0.0;
}

// Is p_j - p_i <= b_i + b_j? (j displaced by the router, i kept, j beats i on the logits.)
PairJudgement judgePair(std::span<const float> x, int32_t i, int32_t j, double c,
                        const DoubleProbabilities& dp, CertifiedProbabilities& cp,
                        LevelCounters& levels) {
  const NearTies t = judgeNearTies(x, {&i, 1}, {&j, 1}, c, dp, cp, levels);
  return pairOf(t.decision, x, i, j, c, dp);
}

// Probabilities: are the non-tie disagreements all within the rounding budget?
// `bestOut` and `worstIn` are the extremes on the logits (the margin's pair when within).
std::optional<Verdict> checkNearTies(std::span<const float> x, std::span<const int32_t> S,
                                     const std::vector<uint8_t>& inS, double c, int32_t bestOut,
                                     int32_t worstIn, CertifiedProbabilities& cp,
                                     LevelCounters& levels, double& worstMargin,
                                     std::optional<DoubleProbabilities>& dp) {
  if (!dp) dp.emplace(x);
  thread_local std::vector<int32_t> displaced;
  displaced.clear();
  for (int32_t j = 0; j < static_cast<int32_t>(x.size()); ++j) {
    if (!inS[j]) displaced.push_back(j);
  }
  const NearTies t = judgeNearTies(x, S, displaced, c, *dp, cp, levels);
  if (t.decision == Decision::kBeyond) {
    const PairJudgement pj = pairOf(t.decision, x, t.i, t.j, c, *dp);
    return violation(
        ViolationKind::kBeatenKept,
        fmt::format("selection: displaced expert {} beats kept expert {} by "
                    "p_j - p_i = {:.6g}, beyond the binary32 rounding budget "
                    "b_i + b_j = {:.6g} ({}, {})",
                    t.j, t.i, pj.diff, pj.budget, logitText(x, t.j), logitText(x, t.i)),
        marginOf(pj));
  }
  worstMargin = std::max(worstMargin, marginOf(pairOf(t.decision, x, worstIn, bestOut, c, *dp)));
  return std::nullopt;
}

// One token's output as the router wrote it (k slots).
struct RouterToken {
  std::span<const int32_t> ids;
  std::span<const float> gates;
};

// Distance in binary32 steps between two finite floats of the same sign.
int64_t ulpDistance(float a, float b) {
  return std::llabs(static_cast<int64_t>(bitsOf(a)) - static_cast<int64_t>(bitsOf(b)));
}

// The router's gates of two tied experts, for a tie certificate: a position-dependent exp
// reads as "equal logits, gates 1 ulp apart" rather than as a sort bug.
std::string tiedGatesText(std::span<const float> x, const RouterToken& out, int32_t a, int32_t b) {
  auto gateOf = [&](int32_t e) -> std::optional<float> {
    for (size_t s = 0; s < out.ids.size(); ++s) {
      if (out.ids[s] == e) return out.gates[s];
    }
    return std::nullopt;
  };
  auto one = [&](int32_t e) {
    const auto g = gateOf(e);
    return g ? fmt::format("expert {} gate {} ({})", e, decimal32(*g), hex32(*g))
             : fmt::format("expert {} not kept", e);
  };
  std::string text = fmt::format("; the router's values: {}, {}", one(a), one(b));
  const auto ga = gateOf(a), gb = gateOf(b);
  if (ga && gb && x[a] == x[b] && bitsOf(*ga) != bitsOf(*gb)) {
    text += fmt::format(
        " (equal logits, gates {} ulp apart: the router computes different values "
        "for equal inputs)",
        ulpDistance(*ga, *gb));
  }
  return text;
}

// The router kept S, not the spec's set. First the disagreements that are not exact ties
// (a displaced j with x_j > x_i for a kept i): on logits they are `kept-set`; on
// probabilities every such pair must be excused, p_j - p_i <= b_i + b_j. With
// H_i = p_i + b_i and L_j = p_j - b_j that is max_{j not in S} L_j <= min_{i in S} H_i: a
// pair where i beats j has p_i >= p_j and holds anyway, so no pair needs to be enumerated
// (O(E log |S|), not O(E |S|)). Only then the exact ties, so that a tie verdict is given
// only where ties alone explain the difference ("the kind names the cause").
// `worstIn` is S's last member in beats order.
std::optional<Verdict> checkDifferentSet(std::span<const float> x, std::span<const int32_t> S,
                                         int32_t worstIn, const std::vector<uint8_t>& inS,
                                         bool onLogits, double c, TieOrder ties,
                                         const RouterToken& out, CertifiedProbabilities& cp,
                                         LevelCounters& levels, double& worstMargin,
                                         std::optional<DoubleProbabilities>& dp,
                                         std::string& reason) {
  const int32_t E = static_cast<int32_t>(x.size());
  int32_t bestOut = -1;
  for (int32_t j = 0; j < E; ++j) {
    if (!inS[j] && (bestOut < 0 || beatsX(x, j, bestOut))) bestOut = j;
  }
  const bool strict = x[bestOut] > x[worstIn];
  if (strict) {
    if (onLogits) {
      ++levels.selectionFloat;
      return violation(ViolationKind::kKeptSet,
                       fmt::format("selection: displaced expert {} ranks above kept expert {} on "
                                   "the logits ({} > {}) and the router selects on logits",
                                   bestOut, worstIn, logitText(x, bestOut), logitText(x, worstIn)));
    }
    if (auto v = checkNearTies(x, S, inS, c, bestOut, worstIn, cp, levels, worstMargin, dp)) {
      return v;
    }
  } else {
    ++levels.selectionFloat;  // exact ties are decided by float comparisons
  }
  reason = strict ? "near-tie-probabilities" : "tie-order";
  if (ties == TieOrder::kAny) return std::nullopt;
  // Lowest index: a displaced j tied exactly with a kept i > j is a violation.
  std::vector<std::pair<float, int32_t>> kept;
  for (int32_t i : S) kept.emplace_back(x[i], i);
  auto byValue = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first < b.first || (!(b.first < a.first) && a.second < b.second);
  };
  std::sort(kept.begin(), kept.end(), byValue);
  for (int32_t j = 0; j < E; ++j) {
    if (inS[j]) continue;
    auto hi = std::upper_bound(kept.begin(), kept.end(), std::make_pair(x[j], E), byValue);
    if (hi != kept.begin() && !((hi - 1)->first < x[j]) && (hi - 1)->second > j) {
      const int32_t i = (hi - 1)->second;
      return violation(
          ViolationKind::kTieHigherIndex,
          fmt::format("selection: experts {} and {} tie exactly ({} and {}); expert "
                      "{} (the lower index) must be kept before expert {}{}",
                      j, i, logitText(x, j), logitText(x, i), j, i, tiedGatesText(x, out, j, i)));
    }
  }
  return std::nullopt;
}

// The binary32 spec's gate formula on the router's kept set S: probs32 from
// softmaxVecSpec<float>, then p_e / (sum over S in index order).
std::vector<float> spec32GatesOfSet(std::span<const float> x, std::span<const int32_t> S) {
  const std::vector<float> p = oracle::softmaxVecSpec(x);
  std::vector<int32_t> byIndex(S.begin(), S.end());
  std::sort(byIndex.begin(), byIndex.end());
  float denom = 0.0f;
  for (int32_t j : byIndex) denom += p[j];
  std::vector<float> g;
  for (int32_t e : S) g.push_back(p[e] / denom);
  return g;
}

std::optional<Verdict> checkGates(std::span<const float> x, std::span<const int32_t> S,
                                  std::span<const float> gates, float m, const Contract& contract,
                                  const VerdictConfig& config, LevelCounters& levels) {
  const int32_t n = static_cast<int32_t>(S.size());
  if (n == 0) return std::nullopt;
  const int32_t E = static_cast<int32_t>(x.size());
  const double c = contract.expMaxUlp;
  const double F = config.gateFactor.value_or(contract.gateBudget.spec32Factor);
  const double U = config.gateUlp.value_or(contract.gateBudget.ulp);
  // Exact gates of S in binary64: G_e = exp(x_e - mS) / sum_S exp(x_j - mS), mS = max over S.
  float mS = x[S[0]];
  for (int32_t e : S) mS = mS <= x[e] ? x[e] : mS;
  // Reused across calls: one token's gates are judged per call, thousands per second.
  thread_local std::vector<double> P, shiftM;
  P.resize(static_cast<size_t>(n));
  shiftM.resize(static_cast<size_t>(n));
  // P_j = exp(-(mS - x_j)) in binary64: the argument's rounding (relative 2^-53) becomes
  // a relative error sh_j 2^-53 of P_j, exp adds < 2^-52; sumErr bounds the sum's error
  // (terms' errors plus n roundings). P_j sh_j stays small when sh_j is huge (P_j ~ 0).
  double sum = 0, sumErr = 0;
  for (int32_t s = 0; s < n; ++s) {
    double sh = static_cast<double>(mS) - static_cast<double>(x[S[s]]);
    P[s] = std::exp(-sh);
    sum += P[s];
    if (P[s] > 0) sumErr += P[s] * (sh * 0x1p-53 + 0x1p-52);
    shiftM[s] = static_cast<double>(m) - static_cast<double>(x[S[s]]);
  }
  sumErr += n * 0x1p-53 * sum + n * kAbsNormal;
  // sum_{j in S} G_j |x_j - m|: the first-order relative error that rounding the exp
  // arguments puts into the gates' common denominator (a weighted mean, so an expert whose
  // gate is ~0 adds ~0 however far below m its logit is).
  double maxShiftS = 0;
  for (int32_t s = 0; s < n; ++s) {
    if (std::isfinite(shiftM[s]) && P[s] > 0) maxShiftS += P[s] / sum * shiftM[s];
  }
  if (!(sum > 0)) return std::nullopt;  // no finite logit in S: a selection violation already
  std::optional<std::vector<float>> g32;
  std::optional<std::vector<Certified>> exact;
  for (int32_t s = 0; s < n; ++s) {
    const int32_t e = S[s];
    double shiftE = static_cast<double>(m) - static_cast<double>(x[e]);
    if (!std::isfinite(shiftE)) shiftE = 0;  // x_e = -inf: G = 0, no relative term
    const double Gd = P[s] / sum;
    const double localShift = static_cast<double>(mS) - static_cast<double>(x[e]);
    const double ownRel = (std::isfinite(localShift) ? localShift : 0.0) * 0x1p-53 + 0x1p-50;
    double err = Gd * (ownRel + 2 * sumErr / sum) + kAbsNormal;
    double gLo = Gd - err, gHi = Gd + err;
    const double g = gates[s];
    auto budgetAt = [&](double G, double spec32Dev) {
      double b = F * spec32Dev + U * ulp32(G);
      if (config.analyticFloor) b += gateFloor(G, shiftE, maxShiftS, n, E, c);
      return b;
    };
    auto decide = [&](double lo, double hi, double& devLo, double& devHi, double& bLo,
                      double& bHi) -> Decision {
      devHi = std::max(std::fabs(g - lo), std::fabs(g - hi));
      devLo = (g >= lo && g <= hi) ? 0.0 : std::min(std::fabs(g - lo), std::fabs(g - hi));
      bLo = budgetAt(std::max(lo, 0.0), 0.0);
      if (devHi <= bLo) return Decision::kWithin;
      if (!g32) g32 = spec32GatesOfSet(x, S);
      const double q = (*g32)[s];
      double tHi = std::max(std::fabs(q - lo), std::fabs(q - hi));
      double tLo = (q >= lo && q <= hi) ? 0.0 : std::min(std::fabs(q - lo), std::fabs(q - hi));
      bLo = budgetAt(std::max(lo, 0.0), tLo);
      bHi = budgetAt(hi, tHi);
      if (devHi <= bLo) return Decision::kWithin;
      if (devLo > bHi) return Decision::kBeyond;
      return Decision::kUndecided;
    };
    double devLo, devHi, bLo, bHi = 0;
    Decision d = decide(gLo, gHi, devLo, devHi, bLo, bHi);
    if (d != Decision::kUndecided) {
      ++levels.gateDouble;
    } else {
      if (!exact) {
        std::vector<size_t> keptSet(S.begin(), S.end());
        exact = oracle::certified::keptGatesEnclosure(x, keptSet);
      }
      const Certified& G = (*exact)[s];
      gLo = G.range.lowerDouble();
      gHi = G.range.upperDouble();
      d = decide(gLo, gHi, devLo, devHi, bLo, bHi);
      if (d == Decision::kUndecided) {
        ++levels.gateUndecided;
      } else {
        ++levels.gateCertified;
      }
    }
    if (d == Decision::kBeyond) {
      return violation(
          ViolationKind::kGateError,
          fmt::format("slot {} (expert {}): gate {} ({}) but the exact gate of the router's kept "
                      "set is in [{:.17g}, {:.17g}]; |g - exact| >= {:.6g} > budget {:.6g} "
                      "(spec32 gate {:.9g}, factor {}, {} ulp, floor {})",
                      s, e, decimal32(gates[s]), hex32(gates[s]), gLo, gHi, devLo, bHi,
                      g32 ? (*g32)[s] : std::nan(""), F, U, config.analyticFloor ? "on" : "off"),
          bHi > 0 ? devLo / bHi : std::numeric_limits<double>::infinity());
    }
  }
  return std::nullopt;
}

}  // namespace

Verdict judgeToken(std::span<const float> x, int32_t k, std::span<const int32_t> ids,
                   std::span<const float> gates, const Contract& contract,
                   const VerdictConfig& config, LevelCounters& levels) {
  thread_local std::vector<uint8_t> seen;
  const int32_t E = static_cast<int32_t>(x.size());
  const int32_t n = std::min(k, E);
  const bool real = isRealRow(x);
  if (auto v = checkSlots(E, k, {n, "min(k, E)", ""}, ids, gates, real, true, seen)) return *v;
  if (E == 0) return Verdict{};  // every slot empty, as checked
  if (!real) {
    Verdict v;
    v.outcome = Outcome::kAcceptable;
    v.reason = "nonreal-row";
    return v;
  }
  if (n == 0) return Verdict{};
  const std::span<const int32_t> S = ids.first(static_cast<size_t>(n));
  const bool onLogits = contract.selectsOn == SelectsOn::kLogits;
  Verdict result;
  double worstMargin = 0;

  // Selection, float level: S is the spec's kept set iff its worst member (in beats order)
  // beats every expert outside S (beats is a strict total order on indices here).
  int32_t worst = S[0];
  for (int32_t e : S) {
    if (beatsX(x, worst, e)) worst = e;
  }
  bool sameSet = true;
  for (int32_t j = 0; j < E && sameSet; ++j) {
    if (!seen[j] && beatsX(x, j, worst)) sameSet = false;
  }

  std::optional<DoubleProbabilities> dp;
  CertifiedProbabilities cp{x, std::nullopt};
  const float m = rowMax(x);
  const TieOrder ties = config.tieOrder.value_or(contract.tieOrder);
  const RouterToken out{ids, gates};
  auto accept = [&](const char* reason) {
    if (result.outcome == Outcome::kExact) {
      result.outcome = Outcome::kAcceptable;
      result.reason = reason;
    }
  };

  if (sameSet) {
    ++levels.selectionFloat;
  } else {
    std::string reason;
    if (auto v = checkDifferentSet(x, S, worst, seen, onLogits, contract.expMaxUlp, ties, out, cp,
                                   levels, worstMargin, dp, reason)) {
      return *v;
    }
    accept(reason.c_str());  // "tie-order" or "near-tie-probabilities"
  }

  // Slot order: each slot must not be beaten by the next one. Exact ties: the lower index
  // first (or any order under "tie_order": "any"); otherwise as the selection is judged.
  if (contract.slotOrder == SlotOrder::kRank) {
    for (int32_t s = 0; s + 1 < n; ++s) {
      const int32_t i = S[s], j = S[s + 1];
      if (beatsX(x, i, j)) continue;
      if (x[i] == x[j]) {
        if (ties == TieOrder::kAny) {
          accept("tie-order");
          continue;
        }
        return violation(ViolationKind::kTieHigherIndex,
                         fmt::format("order: experts {} and {} tie exactly ({} and {}), so expert "
                                     "{} (the lower index) must come first{}",
                                     j, i, logitText(x, j), logitText(x, i), std::min(i, j),
                                     tiedGatesText(x, out, j, i)));
      }
      if (onLogits) {
        return violation(ViolationKind::kSlotOrder,
                         fmt::format("order: expert {} in slot {} ranks above expert {} in slot {} "
                                     "on the logits ({} > {}) and the router selects on logits",
                                     j, s + 1, i, s, logitText(x, j), logitText(x, i)));
      }
      if (!dp) dp.emplace(x);
      PairJudgement pj = judgePair(x, i, j, contract.expMaxUlp, *dp, cp, levels);
      if (pj.decision == Decision::kBeyond) {
        return violation(
            ViolationKind::kSlotOrder,
            fmt::format("order: expert {} in slot {} beats expert {} in slot {} by p_j - p_i = "
                        "{:.6g}, beyond the binary32 rounding budget b_i + b_j = {:.6g} ({}, {})",
                        j, s + 1, i, s, pj.diff, pj.budget, logitText(x, j), logitText(x, i)),
            marginOf(pj));
      }
      worstMargin = std::max(worstMargin, marginOf(pj));
      accept("near-tie-order");
    }
  }

  if (auto v = checkGates(x, S, gates.first(static_cast<size_t>(n)), m, contract, config, levels)) {
    return *v;
  }
  result.margin = worstMargin;
  return result;
}

}  // namespace moe::fuzz
