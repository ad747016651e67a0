#include "moe/oracle/certified/gates.hpp"

#include <cmath>
#include <numeric>
#include <string>

#include "moe/oracle/error.hpp"
#include "moe/oracle/routing.hpp"
#include "softmax_core.hpp"
#include "ziv.hpp"

namespace moe::oracle::certified {

namespace {
std::vector<Certified> encloseSetGates(std::span<const float> logits,
                                       std::span<const std::size_t> set,
                                       const EnclosureOptions& options, const char* what) {
  if (set.empty()) return {};
  float m = -INFINITY;
  for (std::size_t j : set) m = std::max(m, logits[j]);
  if (std::isinf(m)) {
    throw SpecError(std::string(what) +
                    ": every logit of the set is -inf, its gates are 0/0 (not a real number)");
  }
  return detail::zivLoop(
      set.size(), options,
      [&](mpfr_prec_t precision, std::vector<Certified>& out) {
        thread_local std::vector<detail::FloatDiff> pairs;
        thread_local std::vector<Interval*> ranges;
        pairs.clear();
        ranges.clear();
        for (std::size_t t = 0; t < set.size(); ++t) {
          pairs.push_back({logits[set[t]], m});
          ranges.push_back(&out[t].range);
        }
        detail::encloseNormalisedExps(set.size(), nullptr, pairs.data(), precision, ranges.data());
      },
      what);
}
}  // namespace

bool isRealRow(std::span<const float> logits) {
  bool anyFinite = false;
  for (float l : logits) {
    if (std::isnan(l) || l == INFINITY) return false;
    anyFinite = anyFinite || std::isfinite(l);
  }
  return anyFinite || logits.empty();
}

void requireRealRow(std::span<const float> logits) {
  if (isRealRow(logits)) return;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == INFINITY) {
      throw SpecError("not a real-number row: logit " + std::to_string(i) + " is " +
                      (std::isnan(logits[i]) ? "NaN" : "+inf"));
    }
  }
  throw SpecError("not a real-number row: all " + std::to_string(logits.size()) +
                  " logits are -inf (softmax is 0/0)");
}

std::vector<Certified> softmaxEnclosure(std::span<const float> logits,
                                        const EnclosureOptions& options) {
  requireRealRow(logits);
  std::vector<std::size_t> all(logits.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  return encloseSetGates(logits, all, options, "softmaxEnclosure");
}

std::vector<Certified> keptGatesEnclosure(std::span<const float> logits,
                                          std::span<const std::size_t> keptSet,
                                          const EnclosureOptions& options) {
  requireRealRow(logits);
  std::vector<bool> seen(logits.size(), false);
  for (std::size_t t = 0; t < keptSet.size(); ++t) {
    requireIndex("keptGatesEnclosure", keptSet[t], logits.size());
    if (seen[keptSet[t]]) {
      throw SpecError("keptGatesEnclosure: expert " + std::to_string(keptSet[t]) +
                      " repeated in the kept set");
    }
    seen[keptSet[t]] = true;
  }
  return encloseSetGates(logits, keptSet, options, "keptGatesEnclosure");
}

// The spec's kept set is taken on the logits: over the reals softmax preserves every
// comparison (kept_softmax), and binary32 logits are real numbers whose comparison by float
// `>` is exact. The gates of that set are exp(l_e) / sum_{j in S} exp(l_j), which equals
// gatesVecSpec exactly over the reals (getScalar_gatesVecSpec_softmax): k exponentials.
std::vector<Certified> gatesEnclosure(std::size_t k, std::span<const float> logits,
                                      const EnclosureOptions& options) {
  requireRealRow(logits);
  const std::vector<std::size_t> set = keptExperts(k, logits);
  std::vector<Certified> kept = encloseSetGates(logits, set, options, "gatesEnclosure");
  std::vector<Certified> gates(logits.size());  // exact zeros: BigFloat starts at +0
  for (std::size_t t = 0; t < set.size(); ++t) gates[set[t]] = std::move(kept[t]);
  return gates;
}

}  // namespace moe::oracle::certified
