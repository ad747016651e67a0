#include "layer_candidates.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/oracle/family.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"

namespace moe::fuzz {

namespace {

// How many of the weakest kept and the strongest displaced experts the swaps try: near-ties
// are rare and short; a routing the router verdict rejects is dropped anyway.
constexpr size_t kSwapWidth = 3;

// The row's routing inputs in binary32, as the spec evaluates them: the unbiased scores s
// (the gates' weights), the keys the selection ranks (s + b, or the probabilities), and
// which experts are eligible (their group kept).
struct RowScores {
  std::vector<float> s, keys;
  std::vector<bool> eligible;
  std::vector<size_t> spec;  // the binary32 spec's kept experts, best first
  bool renormalize = true;
  float scale = 1.0f;
  bool softmax = true;
};

RowScores rowScores(const LayerCase& c, int32_t t) {
  const auto row = c.logitRow(t);
  RowScores r;
  if (!c.family) {
    r.s = oracle::softmaxVecSpec(row);
    r.keys = r.s;
    r.eligible.assign(r.s.size(), true);
    r.spec = oracle::keptExperts(static_cast<size_t>(c.k), std::span<const float>(r.keys));
    return r;
  }
  const Family& f = *c.family;
  const oracle::RouteParams<float> p = familyRouteParams(f, c.k);
  r.s = oracle::scoresSpec(p.score, row);
  r.keys = oracle::biasedKeys(p.bias, std::span<const float>(r.s));
  r.eligible = oracle::eligibleMask(p, std::span<const float>(r.keys));
  r.spec = oracle::routeKeptExperts(p, std::span<const float>(r.keys));
  r.renormalize = f.renormalize == 1;
  r.scale = f.scale;
  r.softmax = f.score == 0;
  return r;
}

// The spec's gate formula on the set S in binary32: w_e = s_e, divided by the sum over S in
// index order when renormalising, times the scale.
std::vector<float> gatesOfSet(const RowScores& r, std::span<const int32_t> S) {
  std::vector<int32_t> byIndex(S.begin(), S.end());
  std::sort(byIndex.begin(), byIndex.end());
  float total = 0.0f;
  for (int32_t j : byIndex) total += r.s[static_cast<size_t>(j)];
  std::vector<float> g;
  for (int32_t e : S) {
    const float w =
        r.renormalize ? r.s[static_cast<size_t>(e)] / total : r.s[static_cast<size_t>(e)];
    g.push_back(w * r.scale);
  }
  return g;
}

// What the router verdict lets the kernel's gate of a slot stray from the binary32 spec's
// g: (F + 2) times the analytic gate floor (|g - exact| <= F |g32 - exact| + U ulp + floor,
// and |g32 - exact| <= floor), plus U ulps (docs/fuzz.md "The fused layer").
std::vector<double> gateAllowance(const LayerCase& c, int32_t t, const RowScores& r,
                                  std::span<const int32_t> S, std::span<const float> g,
                                  const Contract& contract, const VerdictConfig& config) {
  const auto row = c.logitRow(t);
  const double F = config.gateFactor.value_or(contract.gateBudget.spec32Factor);
  const double U = config.gateUlp.value_or(contract.gateBudget.ulp);
  const double cUlp = contract.expMaxUlp;
  const auto n = static_cast<int32_t>(S.size());
  float m = row.empty() ? 0.0f : row[0];
  for (float v : row) m = m <= v ? v : m;
  auto shiftOf = [&](int32_t e) {
    const double x = row[static_cast<size_t>(e)];
    const double sh = r.softmax ? static_cast<double>(m) - x : std::fabs(x);
    return std::isfinite(sh) ? sh : 0.0;
  };
  double total = 0, weighted = 0;
  for (size_t s = 0; s < S.size(); ++s) total += std::fabs(static_cast<double>(g[s]));
  for (size_t s = 0; s < S.size(); ++s) {
    if (total > 0) weighted += std::fabs(static_cast<double>(g[s])) / total * shiftOf(S[s]);
  }
  std::vector<double> out;
  for (size_t s = 0; s < S.size(); ++s) {
    const double G = std::fabs(static_cast<double>(g[s]));
    const double floor = gateFloor(G, shiftOf(S[s]), weighted, n, c.experts, cUlp) +
                         (2 * cUlp + 2.0 * n + 10) * kU32 * G +
                         std::fabs(r.scale) * (n + 1.0) * 0x1p-126;
    out.push_back((F + 2) * floor + U * ulp32(G));
  }
  return out;
}

// Every way to fill the kept boundary from the experts whose key is within 2^-14 (relative)
// of the last kept one: a kernel whose exp or sum rounds otherwise than the spec's (or ranks
// in binary64) may order such a group any way, and with more than one of them near the
// boundary single swaps do not reach its choice. At most kMaxTieSets sets (beyond that only
// the swaps above are tried).
constexpr size_t kMaxTieSets = 256;

// False when the group has more fillings than kMaxTieSets (none is added then).
template <class Before>
bool addTieGroupSets(const RowScores& r, const std::vector<int32_t>& spec, const Before& before,
                     std::vector<std::vector<int32_t>>& sets) {
  if (spec.empty()) return true;
  const double b = r.keys[static_cast<size_t>(spec.back())];
  if (!std::isfinite(b)) return true;
  const double tol = std::fabs(b) * 0x1p-14 + 0x1p-149;
  std::vector<int32_t> fixed, group;
  for (int32_t e : spec) {
    (std::fabs(r.keys[static_cast<size_t>(e)] - b) <= tol ? group : fixed).push_back(e);
  }
  for (size_t e = 0; e < r.keys.size(); ++e) {
    const auto id = static_cast<int32_t>(e);
    if (r.eligible[e] && std::find(spec.begin(), spec.end(), id) == spec.end() &&
        std::fabs(r.keys[e] - b) <= tol) {
      group.push_back(id);
    }
  }
  const size_t choose = spec.size() - fixed.size(), m = group.size();
  if (choose == 0 || choose >= m) return true;
  double count = 1;  // C(m, choose), checked before enumerating
  for (size_t i = 0; i < choose; ++i) count = count * double(m - i) / double(i + 1);
  if (count > double(kMaxTieSets)) return false;
  std::vector<size_t> pick(choose);
  std::iota(pick.begin(), pick.end(), size_t{0});
  for (;;) {
    std::vector<int32_t> S = fixed;
    for (size_t i : pick) S.push_back(group[i]);
    std::sort(S.begin(), S.end(), [&](int32_t a, int32_t c) {
      return before(static_cast<size_t>(a), static_cast<size_t>(c));
    });
    sets.push_back(std::move(S));
    size_t i = choose;
    while (i > 0 && pick[i - 1] == m - choose + (i - 1)) --i;
    if (i == 0) break;
    ++pick[i - 1];
    for (size_t j = i; j < choose; ++j) pick[j] = pick[j - 1] + 1;
  }
  return true;
}

}  // namespace

Verdict judgeRouting(const LayerCase& c, int32_t t, std::span<const int32_t> ids,
                     std::span<const float> gates, const Contract& contract, Judge& routeJudge) {
  const auto row = c.logitRow(t);
  if (!c.family) return routeJudge.token(row, c.k, ids, gates, contract);
  LevelCounters levels;
  return judgeFamilyToken(row, *c.family, c.k, ids, gates, contract, routeJudge.config(), levels);
}

std::vector<CandidateRouting> candidateRoutings(const LayerCase& c, int32_t t,
                                                const Contract& contract, Judge& routeJudge,
                                                bool* unenumerated) {
  const RowScores r = rowScores(c, t);
  const auto k = static_cast<size_t>(c.k);
  std::vector<std::vector<int32_t>> sets;
  sets.emplace_back(r.spec.begin(), r.spec.end());
  // The same selection ranked on the logits (a kernel that selects on logits may keep the
  // larger logit of two equal binary32 probabilities).
  if (!c.family) {
    const auto onLogits = oracle::keptExperts(k, c.logitRow(t));
    sets.emplace_back(onLogits.begin(), onLogits.end());
  }
  // Single swaps at the kept boundary: the weakest kept for the strongest displaced.
  const std::vector<int32_t> spec(r.spec.begin(), r.spec.end());
  std::vector<int32_t> displaced;
  for (int32_t e = 0; e < c.experts; ++e) {
    if (r.eligible[static_cast<size_t>(e)] &&
        std::find(spec.begin(), spec.end(), e) == spec.end()) {
      displaced.push_back(e);
    }
  }
  const oracle::BeatsOrder<float> before{std::span<const float>(r.keys)};
  std::sort(displaced.begin(), displaced.end(), [&](int32_t a, int32_t b) {
    return before(static_cast<size_t>(a), static_cast<size_t>(b));
  });
  displaced.resize(std::min(displaced.size(), kSwapWidth));
  for (size_t i = spec.size(); i-- > spec.size() - std::min(spec.size(), kSwapWidth);) {
    for (int32_t j : displaced) {
      std::vector<int32_t> S = spec;
      S[i] = j;
      std::sort(S.begin(), S.end(), [&](int32_t a, int32_t b) {
        return before(static_cast<size_t>(a), static_cast<size_t>(b));
      });
      sets.push_back(std::move(S));
    }
  }
  const bool all = addTieGroupSets(r, spec, before, sets);
  if (unenumerated) *unenumerated = !all;
  std::vector<CandidateRouting> out;
  for (size_t n = 0; n < sets.size(); ++n) {
    const auto& S = sets[n];
    if (n > 0 && std::find(sets.begin(), sets.begin() + static_cast<std::ptrdiff_t>(n), S) !=
                     sets.begin() + static_cast<std::ptrdiff_t>(n)) {
      continue;
    }
    const std::vector<float> g = gatesOfSet(r, S);
    std::vector<int32_t> ids(S);
    std::vector<float> gates(g);
    ids.resize(k, -1);
    gates.resize(k, 0.0f);
    const Verdict v = judgeRouting(c, t, ids, gates, contract, routeJudge);
    if (v.outcome == Outcome::kViolation && n > 0) continue;
    CandidateRouting cand;
    cand.experts = S;
    cand.gates.assign(g.begin(), g.end());
    cand.allowance = gateAllowance(c, t, r, S, g, contract, routeJudge.config());
    cand.reason = v.outcome == Outcome::kViolation ? "" : v.reason;
    out.push_back(std::move(cand));
  }
  return out;
}

}  // namespace moe::fuzz
