// judgeLayerToken / judgeLayerOutput: a fused layer's y against the spec's sparse forward
// (docs/fuzz.md "The fused layer"); a y beyond its budget is named by the cause an
// experiment bears out (layer_diagnosis.cpp).
#include "moe/fuzz/layer_verdict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "layer_candidates.hpp"
#include "layer_diagnosis.hpp"
#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

Outcome LayerCaseResult::worst() const {
  if (violation) return Outcome::kViolation;
  Outcome o = Outcome::kExact;
  for (const auto& v : tokens) o = std::max(o, v.outcome);
  return o;
}

LayerFit fitOf(std::span<const float> y, const LayerReference& r) {
  LayerFit f;
  for (size_t cc = 0; cc < r.ref.size(); ++cc) {
    if (!std::isfinite(y[cc])) {
      if (f.nonfinite < 0) f.nonfinite = static_cast<int32_t>(cc);
      f.margin = std::numeric_limits<double>::infinity();
      f.coordinate = static_cast<int32_t>(cc);
      continue;
    }
    const double m = std::fabs(static_cast<double>(y[cc]) - r.ref[cc]) / r.budget[cc];
    if (f.nonfinite < 0 && m > f.margin) {
      f.margin = m;
      f.coordinate = static_cast<int32_t>(cc);
    }
  }
  return f;
}

const ExpertTerms& TermsCache::at(int32_t e) {
  auto it = terms.find(e);
  if (it == terms.end()) it = terms.emplace(e, expertTerms(c, t, e, siluUlp)).first;
  return it->second;
}

LayerReference referenceOf(TermsCache& cache, std::span<const int32_t> experts,
                           std::span<const double> gates, std::span<const double> allowance,
                           double factor) {
  std::vector<const ExpertTerms*> terms;
  for (int32_t e : experts) terms.push_back(&cache.at(e));
  return combineReference(experts, gates, terms, allowance, cache.c.hidden, cache.c.intermediate,
                          factor);
}

namespace {

LayerVerdict acceptable(const char* reason, int32_t t) {
  LayerVerdict v;
  v.outcome = Outcome::kAcceptable;
  v.reason = reason;
  v.token = t;
  return v;
}

}  // namespace

LayerVerdict judgeLayerToken(const LayerCase& c, int32_t t, const LayerOutput& out,
                             const Contract& contract, Judge& routeJudge, const LayerRerun& rerun) {
  const std::span<const float> y(out.y.data() + static_cast<size_t>(t) * c.hidden,
                                 static_cast<size_t>(c.hidden));
  const double factor = contract.layer.budgetFactor;
  TermsCache cache{c, t, contract.layer.siluUlp, {}};
  std::string routeReason;
  LayerRouting routing;
  if (out.routed) {
    const std::span<const int32_t> ids(out.ids.data() + static_cast<size_t>(t) * c.k,
                                       static_cast<size_t>(c.k));
    const std::span<const float> gates(out.gates.data() + static_cast<size_t>(t) * c.k,
                                       static_cast<size_t>(c.k));
    const Verdict rv = judgeRouting(c, t, ids, gates, contract, routeJudge);
    if (rv.outcome == Outcome::kViolation) {
      LayerVerdict v;
      v.outcome = Outcome::kViolation;
      v.kind = rv.kind;
      v.tag = rv.tag;
      v.token = t;
      v.margin = rv.margin;
      v.certificate = "the routing the layer returned: " + rv.certificate;
      return v;
    }
    if (!isRealRow(c.logitRow(t))) return acceptable("nonreal-row", t);
    routeReason = rv.reason;
    for (int32_t s = 0; s < c.k; ++s) {
      if (ids[s] < 0) continue;
      routing.experts.push_back(ids[s]);
      routing.gates.push_back(gates[s]);
    }
    routing.returned = true;
  } else {
    if (!isRealRow(c.logitRow(t))) return acceptable("nonreal-row", t);
    // Acceptable for some routing the router verdict accepts: the first that fits; else
    // the one that fits best is the reference a violation is told against.
    double best = std::numeric_limits<double>::infinity();
    bool unenumerated = false;
    for (const CandidateRouting& cand :
         candidateRoutings(c, t, contract, routeJudge, &unenumerated)) {
      const LayerReference r = referenceOf(cache, cand.experts, cand.gates, cand.allowance, factor);
      const LayerFit f = fitOf(y, r);
      if (r.overflow) return acceptable("overflow", t);
      if (f.margin <= 1) {
        LayerVerdict v;
        v.token = t;
        v.margin = f.margin;
        if (!cand.reason.empty()) {
          v.outcome = Outcome::kAcceptable;
          v.reason = "near-tie-routing";
        }
        return v;
      }
      if (f.margin < best || routing.experts.empty()) {
        best = f.margin;
        routing = {cand.experts, cand.gates, cand.allowance, false};
      }
    }
    // Too many near-tied experts at the kept boundary to try every routing they allow: y is
    // not judged (the kernel's routing, when asked for, is; docs/fuzz.md "The fused layer").
    if (unenumerated) return acceptable("near-tie-group-unenumerated", t);
  }
  const LayerReference r =
      referenceOf(cache, routing.experts, routing.gates, routing.allowance, factor);
  if (r.overflow) return acceptable("overflow", t);
  const LayerFit f = fitOf(y, r);
  if (f.margin <= 1) {
    LayerVerdict v;
    v.token = t;
    v.margin = f.margin;
    if (!routeReason.empty()) {
      v.outcome = Outcome::kAcceptable;
      v.reason = routeReason;
    }
    return v;
  }
  return diagnoseLayerToken(cache, y, routing, r, f, factor, rerun);
}

LayerCaseResult judgeLayerOutput(const LayerCase& c, LayerOutput out, const Contract& contract,
                                 Judge& routeJudge, const LayerRerun& rerun) {
  LayerCaseResult r;
  if (out.fault) {
    LayerVerdict v;
    v.outcome = Outcome::kViolation;
    v.kind = out.fault->kind;
    v.tag = out.fault->tag;
    v.certificate = fmt::format("{} ({})", out.fault->detail, layerShapeText(c));
    r.violation = std::move(v);
    r.output = std::move(out);
    return r;
  }
  if (out.abstained) {
    r.abstained = true;
    r.abstainReason = out.abstainReason;
    r.output = std::move(out);
    return r;
  }
  for (int32_t t = 0; t < c.tokens; ++t) {
    LayerVerdict v = judgeLayerToken(c, t, out, contract, routeJudge, rerun);
    r.tokens.push_back(v);
    if (v.outcome == Outcome::kViolation) {
      r.violation = std::move(v);
      break;
    }
  }
  r.output = std::move(out);
  return r;
}

}  // namespace moe::fuzz
