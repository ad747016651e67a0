// The cause of a fused layer's y beyond its budget, told by experiments as the style of
// delta debugging asks (docs/fuzz.md "The fused layer", kinds):
// - numbers first: y fits the routing with one kept expert left out (missing-expert), one
//   kept expert added twice (extra-expert), the kept experts weighted by other gates
//   (combine-gate: the gates fitted jointly by least squares), or an expert the routing
//   does not keep added with some gate (extra-expert); n fitted gates need n + 1
//   coordinates that show them;
// - then a rerun confirms it: the same token with x negated (the routing and gates depend on
//   the logits only, the experts' outputs change) must fit the same hypothesis, the same
//   fitted gate included; a cause the rerun does not bear out is not named;
// - otherwise expert-output, its expert isolated by rerunning the token with every other
//   kept expert's W2 zeroed (the routing unchanged): the first expert wrong alone is named.
#include "layer_diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

namespace {

struct Hypothesis {
  ViolationKind kind = ViolationKind::kNone;
  int32_t expert = -1;
  int32_t slot = -1;  // the routing's slot it changes; -1 for an expert not kept
  double alpha = 0;   // fitted: the added gate (extra-expert)
  bool fitted = false;
  std::vector<double> alphas;  // combine-gate: each slot's gate change
};

LayerRouting applyHypothesis(const LayerRouting& r, const Hypothesis& h) {
  LayerRouting out = r;
  if (out.allowance.empty()) out.allowance.assign(out.experts.size(), 0.0);
  const auto s = static_cast<size_t>(h.slot);
  switch (h.kind) {
    case ViolationKind::kMissingExpert:
      out.experts.erase(out.experts.begin() + h.slot);
      out.gates.erase(out.gates.begin() + h.slot);
      out.allowance.erase(out.allowance.begin() + h.slot);
      break;
    case ViolationKind::kExtraExpert:
      out.experts.push_back(h.expert);
      out.gates.push_back(h.slot >= 0 ? r.gates[s] : h.alpha);
      out.allowance.push_back(h.slot >= 0 ? out.allowance[s] : 0.0);
      break;
    case ViolationKind::kCombineGate:
      for (size_t j = 0; j < h.alphas.size(); ++j) out.gates[j] += h.alphas[j];
      break;
    default:
      break;
  }
  return out;
}

double marginUnder(TermsCache& cache, std::span<const float> y, const LayerRouting& r,
                   const Hypothesis& h, double factor) {
  const LayerRouting changed = applyHypothesis(r, h);
  const LayerReference ref =
      referenceOf(cache, changed.experts, changed.gates, changed.allowance, factor);
  return fitOf(y, ref).margin;
}

// The gate alpha that best explains the residual y - ref by expert e's output (least
// squares), and whether at least two coordinates show it beyond their budget.
bool fitGate(std::span<const float> y, const LayerReference& ref, const ExpertTerms& T,
             double& alpha) {
  double num = 0, den = 0;
  for (size_t c = 0; c < ref.ref.size(); ++c) {
    num += (static_cast<double>(y[c]) - ref.ref[c]) * T.f[c];
    den += T.f[c] * T.f[c];
  }
  if (!(den > 0) || !std::isfinite(num)) return false;
  alpha = num / den;
  int shown = 0;
  for (size_t c = 0; c < ref.ref.size(); ++c) shown += std::fabs(alpha * T.f[c]) > ref.budget[c];
  return shown >= 2;
}

// The gate changes alpha_s that best explain the residual y - ref by the kept experts'
// outputs (least squares, the normal equations solved with partial pivoting), and whether
// more coordinates show them beyond their budget than there are gates.
bool fitGates(std::span<const float> y, const LayerReference& ref,
              std::span<const ExpertTerms* const> T, std::vector<double>& alphas) {
  const size_t n = T.size(), H = ref.ref.size();
  if (n == 0) return false;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (size_t c = 0; c < H; ++c) {
    const double r = static_cast<double>(y[c]) - ref.ref[c];
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) a[i][j] += T[i]->f[c] * T[j]->f[c];
      a[i][n] += T[i]->f[c] * r;
    }
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t i = col + 1; i < n; ++i) {
      if (std::fabs(a[i][col]) > std::fabs(a[pivot][col])) pivot = i;
    }
    if (!(std::fabs(a[pivot][col]) > 0)) return false;  // dependent outputs: no unique fit
    std::swap(a[col], a[pivot]);
    for (size_t i = 0; i < n; ++i) {
      if (i == col) continue;
      const double m = a[i][col] / a[col][col];
      for (size_t j = col; j <= n; ++j) a[i][j] -= m * a[col][j];
    }
  }
  alphas.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) alphas[i] = a[i][n] / a[i][i];
  size_t shown = 0;
  for (size_t c = 0; c < H; ++c) {
    double d = 0;
    for (size_t i = 0; i < n; ++i) d += alphas[i] * T[i]->f[c];
    shown += std::fabs(d) > ref.budget[c];
  }
  return shown > n &&
         std::all_of(alphas.begin(), alphas.end(), [](double v) { return std::isfinite(v); });
}

// The numbers' hypothesis: parameter-free ones first, then fitted gates.
std::optional<Hypothesis> hypothesisOf(TermsCache& cache, std::span<const float> y,
                                       const LayerRouting& r, const LayerReference& ref,
                                       double factor) {
  const auto n = static_cast<int32_t>(r.experts.size());
  for (auto kind : {ViolationKind::kMissingExpert, ViolationKind::kExtraExpert}) {
    for (int32_t s = 0; s < n; ++s) {
      const Hypothesis h{kind, r.experts[static_cast<size_t>(s)], s, 0, false, {}};
      if (marginUnder(cache, y, r, h, factor) <= 1) return h;
    }
  }
  {
    Hypothesis h{ViolationKind::kCombineGate, -1, -1, 0, true, {}};
    std::vector<const ExpertTerms*> T;
    for (int32_t e : r.experts) T.push_back(&cache.at(e));
    if (fitGates(y, ref, T, h.alphas) && marginUnder(cache, y, r, h, factor) <= 1) {
      // The expert named: the one whose gate change moves y most.
      double most = -1;
      for (size_t j = 0; j < T.size(); ++j) {
        double size = 0;
        for (double f : T[j]->f) size = std::max(size, std::fabs(h.alphas[j] * f));
        if (size > most) most = size, h.expert = r.experts[j], h.slot = static_cast<int32_t>(j);
      }
      return h;
    }
  }
  for (int32_t e = 0; e < cache.c.experts; ++e) {
    if (std::find(r.experts.begin(), r.experts.end(), e) != r.experts.end()) continue;
    Hypothesis h{ViolationKind::kExtraExpert, e, -1, 0, true, {}};
    if (fitGate(y, ref, cache.at(e), h.alpha) && h.alpha != 0 &&
        marginUnder(cache, y, r, h, factor) <= 1) {
      return h;
    }
  }
  return std::nullopt;
}

// The rerun's output for a one-token case, when it ran and returned a y to judge.
std::optional<std::vector<float>> rerunY(const LayerRerun& rerun, const LayerCase& one) {
  if (!rerun) return std::nullopt;
  std::optional<LayerOutput> out = rerun(one);
  if (!out || out->fault || out->abstained || out->status != 0 ||
      out->y.size() != static_cast<size_t>(one.hidden)) {
    return std::nullopt;
  }
  return std::move(out->y);
}

// The token with x negated: another output of every expert, the same routing.
LayerCase negatedX(const LayerCase& c, int32_t t) {
  LayerCase one = layerTokenCase(c, t);
  for (float& v : one.x) v = -v;
  return one;
}

// Confirmed: on the rerun with x negated, y is beyond the routing's budget again and fits
// the same hypothesis.
bool confirmHypothesis(TermsCache& cache, const LayerRouting& r, const Hypothesis& h, double factor,
                       const LayerRerun& rerun, std::string& how) {
  const LayerCase other = negatedX(cache.c, cache.t);
  const auto y = rerunY(rerun, other);
  if (!y) {
    how = "not confirmed: no rerun";
    return false;
  }
  TermsCache otherCache{other, 0, cache.siluUlp, {}};
  const LayerReference ref = referenceOf(otherCache, r.experts, r.gates, r.allowance, factor);
  if (fitOf(*y, ref).margin <= 1) {
    how = "the rerun with x negated is within budget";
    return false;
  }
  const double m = marginUnder(otherCache, *y, r, h, factor);
  if (m > 1) {
    how = fmt::format("the rerun with x negated does not fit it (margin {:.3g})", m);
    return false;
  }
  how = "confirmed: the rerun with x negated (other expert outputs, the same routing) fits it too";
  return true;
}

std::string routingText(const LayerRouting& r) {
  std::string text;
  for (size_t s = 0; s < r.experts.size(); ++s) {
    text += fmt::format("{}{} (gate {:.9g})", s ? ", " : "", r.experts[s], r.gates[s]);
  }
  return text.empty() ? "none" : text;
}

std::string coordinateText(std::span<const float> y, const LayerReference& ref, int32_t c) {
  const auto i = static_cast<size_t>(c);
  return fmt::format(
      "y[{}] = {} ({}), the spec's sparse forward {:.17g}, |y - ref| = {:.6g} > "
      "budget {:.6g}",
      c, decimal32(y[i]), hex32(y[i]), ref.ref[i],
      std::fabs(static_cast<double>(y[i]) - ref.ref[i]), ref.budget[i]);
}

std::string hypothesisText(const Hypothesis& h, const LayerRouting& r) {
  switch (h.kind) {
    case ViolationKind::kMissingExpert:
      return fmt::format(
          "y fits the kept experts without expert {} (slot {}): its output is "
          "missing",
          h.expert, h.slot);
    case ViolationKind::kExtraExpert:
      if (h.slot >= 0) {
        return fmt::format("y fits expert {}'s output added twice (kept once, slot {})", h.expert,
                           h.slot);
      }
      return fmt::format(
          "y fits the kept experts plus expert {}, which the routing does not "
          "keep, with gate {:.6g}",
          h.expert, h.alpha);
    case ViolationKind::kCombineGate: {
      std::string text = "y fits the kept experts' outputs weighted by other gates:";
      for (size_t j = 0; j < h.alphas.size(); ++j) {
        text +=
            fmt::format(" expert {} by {:.9g} (its gate {:.9g}){}", r.experts[j],
                        r.gates[j] + h.alphas[j], r.gates[j], j + 1 < h.alphas.size() ? "," : "");
      }
      return text;
    }
    default:
      return "";
  }
}

// expert-output: the first kept expert whose output is wrong alone (every other kept
// expert's W2 zeroed, the routing unchanged), or -1.
int32_t isolateExpert(TermsCache& cache, const LayerRouting& r, double factor,
                      const LayerRerun& rerun, int32_t& coordinate, std::string& how) {
  if (!rerun) {
    how = "not isolated: no rerun";
    return -1;
  }
  const size_t perExpert = static_cast<size_t>(cache.c.hidden) * cache.c.intermediate;
  for (size_t s = 0; s < r.experts.size(); ++s) {
    LayerCase alone = layerTokenCase(cache.c, cache.t);
    for (size_t j = 0; j < r.experts.size(); ++j) {
      if (r.experts[j] == r.experts[s]) continue;
      std::fill_n(alone.w2.begin() + static_cast<std::ptrdiff_t>(r.experts[j] * perExpert),
                  perExpert, 0.0f);
    }
    const auto y = rerunY(rerun, alone);
    if (!y) continue;
    const std::vector<int32_t> one{r.experts[s]};
    const std::vector<double> g{r.gates[s]};
    std::vector<double> allow;
    if (!r.allowance.empty()) allow.push_back(r.allowance[s]);
    const LayerReference ref = referenceOf(cache, one, g, allow, factor);
    const LayerFit f = fitOf(*y, ref);
    if (f.margin > 1) {
      coordinate = f.coordinate;
      how = fmt::format(
          "isolated: rerun with every other kept expert's W2 zeroed (the routing unchanged), "
          "expert {} alone gives {}",
          r.experts[s], coordinateText(*y, ref, f.coordinate));
      return r.experts[s];
    }
  }
  how = "no kept expert is wrong alone (each rerun with the others' W2 zeroed is within budget)";
  return -1;
}

}  // namespace

LayerVerdict diagnoseLayerToken(TermsCache& cache, std::span<const float> y,
                                const LayerRouting& routing, const LayerReference& ref,
                                const LayerFit& f, double factor, const LayerRerun& rerun) {
  LayerVerdict v;
  v.outcome = Outcome::kViolation;
  v.token = cache.t;
  v.margin = f.margin;
  const std::string against = fmt::format(
      "token {}: against the kept experts {} ({})", cache.t, routingText(routing),
      routing.returned ? "the routing the layer returned" : "an acceptable routing, best fit");
  if (f.nonfinite >= 0) {
    const auto c = static_cast<size_t>(f.nonfinite);
    v.kind = ViolationKind::kLayerNonfinite;
    v.coordinate = f.nonfinite;
    v.certificate = fmt::format(
        "{}: y[{}] = {} ({}) is not finite, but the binary32 evaluation cannot overflow here "
        "(the spec's sparse forward is {:.17g}, every magnitude below 2^126)",
        against, c, decimal32(y[c]), hex32(y[c]), ref.ref[c]);
    return v;
  }
  v.coordinate = f.coordinate;
  const std::string worst = coordinateText(y, ref, f.coordinate);
  if (auto h = hypothesisOf(cache, y, routing, ref, factor)) {
    std::string how;
    const bool confirmed = confirmHypothesis(cache, routing, *h, factor, rerun, how);
    // A cause with no free parameter may be named from the numbers when there is no rerun
    // to try; a fitted gate, never.
    const bool noRerun = how == "not confirmed: no rerun";
    if (confirmed || (noRerun && !h->fitted)) {
      v.kind = h->kind;
      v.expert = h->expert;
      v.certificate =
          fmt::format("{}: {}; {} [{}]", against, worst, hypothesisText(*h, routing), how);
      return v;
    }
    v.certificate = fmt::format(" (the numbers fit: {}; {})", hypothesisText(*h, routing), how);
  }
  std::string how;
  int32_t coordinate = f.coordinate;
  v.kind = ViolationKind::kExpertOutput;
  v.expert = isolateExpert(cache, routing, factor, rerun, coordinate, how);
  v.coordinate = coordinate;
  v.certificate = fmt::format("{}: {}; {}{}", against, worst, how, v.certificate);
  return v;
}

}  // namespace moe::fuzz
