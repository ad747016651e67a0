// Enclosures of the family's scores, keys and gates over the reals (family.hpp).
#include <cmath>
#include <string>

#include "family_forms.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/error.hpp"
#include "softmax_core.hpp"
#include "sums_of_others.hpp"
#include "ziv.hpp"

namespace moe::oracle::certified {

namespace {

// The first reason the row is not real, or "".
std::string notRealReason(const RouteParams<float>& p, std::span<const float> logits) {
  const std::string invalid = paramsInvalidReason(logits.size(), p);
  if (!invalid.empty()) return "invalid routing parameters: " + invalid;
  if (!std::isfinite(p.scale)) return "the scale is not finite";
  for (std::size_t e = 0; e < p.bias.size(); ++e) {
    if (!std::isfinite(p.bias[e])) return "bias " + std::to_string(e) + " is not finite";
  }
  if (p.score == ScoreFn::softmax) {
    if (isRealRow(logits)) return "";
    try {
      requireRealRow(logits);
    } catch (const SpecError& err) {
      return err.what();
    }
  }
  for (std::size_t e = 0; e < logits.size(); ++e) {
    if (std::isnan(logits[e])) {
      return "not a real-number row: logit " + std::to_string(e) + " is NaN";
    }
  }
  return "";
}

// The exact sigmoid scores of the logits: the forms of family_forms.hpp, evaluated.
void encloseScoresOrKeys(detail::RowAtoms& atoms, std::span<const float> logits,
                         std::span<const float> bias, mpfr_prec_t precision,
                         std::vector<Certified>& out) {
  atoms.encloseAt(precision);
  for (std::size_t e = 0; e < logits.size(); ++e) {
    atoms.interval(atoms.keyForm(logits[e], bias.empty() ? nullptr : &bias[e]), out[e].range);
  }
}

// [lo, hi] * scale in place, rounded outwards (a negative scale swaps the bounds).
void timesScale(Interval& iv, float scale) {
  if (scale < 0) mpfr_swap(iv.lower.get(), iv.upper.get());
  mpfr_mul_d(iv.lower.get(), iv.lower.get(), static_cast<double>(scale), MPFR_RNDD);
  mpfr_mul_d(iv.upper.get(), iv.upper.get(), static_cast<double>(scale), MPFR_RNDU);
}

// sigmoid(l) at `precision`, outwards: decreasing in exp(-l), bounds from opposite bounds.
void sigmoidInterval(float l, Interval& out) {
  const mpfr_prec_t precision = out.lower.precision();
  if (l == -INFINITY || l == INFINITY || l == 0.0f) {
    const double v = l == 0.0f ? 0.5 : (l > 0 ? 1.0 : 0.0);
    mpfr_set_d(out.lower.get(), v, MPFR_RNDN);
    mpfr_set_d(out.upper.get(), v, MPFR_RNDN);
    return;
  }
  BigFloat arg(64), e(precision), den(precision);
  mpfr_set_flt(arg.get(), -l, MPFR_RNDN);
  mpfr_exp(e.get(), arg.get(), MPFR_RNDU);
  mpfr_add_ui(den.get(), e.get(), 1, MPFR_RNDU);
  mpfr_ui_div(out.lower.get(), 1, den.get(), MPFR_RNDD);
  mpfr_exp(e.get(), arg.get(), MPFR_RNDD);
  mpfr_add_ui(den.get(), e.get(), 1, MPFR_RNDD);
  mpfr_ui_div(out.upper.get(), 1, den.get(), MPFR_RNDU);
}

// w_t = s_t / sum_{u in S} s_u for sigmoid scores: s_t / (s_t + rest_t), increasing in s_t
// and decreasing in rest_t, so no dependency blow-up. Scores exactly 0 (logit -inf) stay
// exactly 0; a single nonzero score gets exactly 1.
void renormaliseSigmoid(std::span<const float> logits, std::span<const std::size_t> set,
                        mpfr_prec_t precision, std::vector<Certified>& out) {
  const std::size_t n = set.size();
  std::vector<Interval> s(n);
  std::size_t nonzero = 0;
  for (std::size_t t = 0; t < n; ++t) {
    mpfr_set_prec(s[t].lower.get(), precision);
    mpfr_set_prec(s[t].upper.get(), precision);
    sigmoidInterval(logits[set[t]], s[t]);
    nonzero += logits[set[t]] != -INFINITY ? 1 : 0;
  }
  detail::SumsOfOthers rest;
  rest.sum(
      n, precision, [&](std::size_t t) { return s[t].lower.get(); },
      [&](std::size_t t) { return s[t].upper.get(); });
  BigFloat den(precision);
  for (std::size_t t = 0; t < n; ++t) {
    Interval& w = out[t].range;
    if (logits[set[t]] == -INFINITY || nonzero == 1) {
      const double v = logits[set[t]] == -INFINITY ? 0.0 : 1.0;
      mpfr_set_d(w.lower.get(), v, MPFR_RNDN);
      mpfr_set_d(w.upper.get(), v, MPFR_RNDN);
      continue;
    }
    rest.upper(t, den.get());
    mpfr_add(den.get(), den.get(), s[t].lower.get(), MPFR_RNDU);
    mpfr_div(w.lower.get(), s[t].lower.get(), den.get(), MPFR_RNDD);
    rest.lower(t, den.get());
    mpfr_add(den.get(), den.get(), s[t].upper.get(), MPFR_RNDD);
    mpfr_div(w.upper.get(), s[t].upper.get(), den.get(), MPFR_RNDU);
  }
}

// softmax weights exp(l_t - m) / sum_{u in over} exp(l_u - m) for t in `set`, `over` a
// superset of `set` (the kept set when renormalising, every expert when not).
void softmaxWeights(std::span<const float> logits, std::span<const std::size_t> set,
                    std::span<const std::size_t> over, mpfr_prec_t precision,
                    std::vector<Certified>& out) {
  float m = -INFINITY;
  for (std::size_t j : over) m = std::max(m, logits[j]);
  std::vector<detail::FloatDiff> pairs;
  std::vector<Interval> all(over.size());
  std::vector<Interval*> ranges;
  std::vector<std::size_t> where(logits.size(), over.size());
  for (std::size_t t = 0; t < over.size(); ++t) {
    pairs.push_back({logits[over[t]], m});
    mpfr_set_prec(all[t].lower.get(), precision);
    mpfr_set_prec(all[t].upper.get(), precision);
    ranges.push_back(&all[t]);
    where[over[t]] = t;
  }
  detail::encloseNormalisedExps(over.size(), nullptr, pairs.data(), precision, ranges.data());
  for (std::size_t t = 0; t < set.size(); ++t) {
    mpfr_set(out[t].range.lower.get(), all[where[set[t]]].lower.get(), MPFR_RNDD);
    mpfr_set(out[t].range.upper.get(), all[where[set[t]]].upper.get(), MPFR_RNDU);
  }
}

}  // namespace

bool isRealRouteRow(const RouteParams<float>& p, std::span<const float> logits) {
  return notRealReason(p, logits).empty();
}

void requireRealRouteRow(const RouteParams<float>& p, std::span<const float> logits) {
  const std::string why = notRealReason(p, logits);
  if (!why.empty()) throw SpecError(why);
}

std::vector<Certified> sigmoidEnclosure(std::span<const float> logits,
                                        const EnclosureOptions& options) {
  RouteParams<float> p;
  p.score = ScoreFn::sigmoid;
  requireRealRouteRow(p, logits);
  detail::RowAtoms atoms(ScoreFn::sigmoid, logits);
  return detail::zivLoop(
      logits.size(), options,
      [&](mpfr_prec_t precision, std::vector<Certified>& out) {
        encloseScoresOrKeys(atoms, logits, {}, precision, out);
      },
      "sigmoidEnclosure");
}

std::vector<Certified> scoresEnclosure(ScoreFn score, std::span<const float> logits,
                                       const EnclosureOptions& options) {
  return score == ScoreFn::softmax ? softmaxEnclosure(logits, options)
                                   : sigmoidEnclosure(logits, options);
}

std::vector<Certified> biasedKeysEnclosure(ScoreFn score, std::span<const float> logits,
                                           std::span<const float> bias,
                                           const EnclosureOptions& options) {
  RouteParams<float> p;
  p.score = score;
  p.bias = bias;
  requireRealRouteRow(p, logits);
  detail::RowAtoms atoms(score, logits);
  return detail::zivLoop(
      logits.size(), options,
      [&](mpfr_prec_t precision, std::vector<Certified>& out) {
        encloseScoresOrKeys(atoms, logits, bias, precision, out);
      },
      "biasedKeysEnclosure");
}

std::vector<Certified> routeKeptGatesEnclosure(const RouteParams<float>& p,
                                               std::span<const float> logits,
                                               std::span<const std::size_t> keptSet,
                                               const EnclosureOptions& options) {
  requireRealRouteRow(p, logits);
  std::vector<bool> seen(logits.size(), false);
  bool anyNonzero = false;
  for (std::size_t e : keptSet) {
    requireIndex("routeKeptGatesEnclosure", e, logits.size());
    if (seen[e]) {
      throw SpecError("routeKeptGatesEnclosure: expert " + std::to_string(e) +
                      " repeated in the kept set");
    }
    seen[e] = true;
    anyNonzero = anyNonzero || logits[e] != -INFINITY;
  }
  if (keptSet.empty()) return {};
  if (p.renormalize && !anyNonzero) {
    throw SpecError(
        "routeKeptGatesEnclosure: every kept score is exactly 0 (logit -inf), the "
        "renormalised gates are 0/0 (not a real number)");
  }
  std::vector<std::size_t> every(logits.size());
  for (std::size_t e = 0; e < every.size(); ++e) every[e] = e;
  return detail::zivLoop(
      keptSet.size(), options,
      [&](mpfr_prec_t precision, std::vector<Certified>& out) {
        if (p.score == ScoreFn::softmax) {
          softmaxWeights(logits, keptSet, p.renormalize ? keptSet : std::span(every), precision,
                         out);
        } else if (p.renormalize) {
          renormaliseSigmoid(logits, keptSet, precision, out);
        } else {
          for (std::size_t t = 0; t < keptSet.size(); ++t) {
            sigmoidInterval(logits[keptSet[t]], out[t].range);
          }
        }
        for (auto& c : out) timesScale(c.range, p.scale);
      },
      "routeKeptGatesEnclosure");
}

RouteGatesResult routeGatesEnclosure(const RouteParams<float>& p, std::span<const float> logits,
                                     const EnclosureOptions& options) {
  RouteGatesResult r;
  r.decision = routeDecisionEnclosure(p, logits, options);
  if (!r.decision.decided) return r;
  const auto& set = r.decision.keptExperts;
  std::vector<Certified> kept = routeKeptGatesEnclosure(p, logits, set, options);
  r.gates.resize(logits.size());  // exact zeros: BigFloat starts at +0
  for (std::size_t t = 0; t < set.size(); ++t) r.gates[set[t]] = std::move(kept[t]);
  return r;
}

}  // namespace moe::oracle::certified
