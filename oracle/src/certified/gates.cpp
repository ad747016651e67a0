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
// 320 bits hold the difference of any two finite binary32 numbers exactly (their bits span
// at most 2^127 down to 2^-149, 277 bits, plus a carry).
constexpr mpfr_prec_t kExactFloatDiffBits = 320;

// Exact differences l_t - m for the selected logits, reused across calls on this thread.
class DiffWorkspace {
 public:
  ~DiffWorkspace() {
    for (auto& d : diffs_) mpfr_clear(d.value);
  }
  const std::vector<mpfr_srcptr>& fill(std::span<const float> logits,
                                       std::span<const std::size_t> set, float m) {
    while (diffs_.size() < set.size()) {
      diffs_.emplace_back();
      mpfr_init2(diffs_.back().value, kExactFloatDiffBits);
    }
    ptrs_.clear();
    for (std::size_t t = 0; t < set.size(); ++t) {
      mpfr_ptr d = diffs_[t].value;
      const float l = logits[set[t]];
      if (std::isinf(l)) {
        mpfr_set_inf(d, -1);  // a -inf logit (isRealRow excludes +inf): probability 0
      } else {
        mpfr_set_flt(d, l, MPFR_RNDN);                        // exact
        mpfr_sub_d(d, d, static_cast<double>(m), MPFR_RNDN);  // exact at 320 bits
      }
      ptrs_.push_back(d);
    }
    return ptrs_;
  }

 private:
  struct Slot {
    mpfr_t value;
  };
  std::vector<Slot> diffs_;
  std::vector<mpfr_srcptr> ptrs_;
};

thread_local DiffWorkspace tDiffs;

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
      [&](mpfr_prec_t precision, std::vector<Interval>& out) {
        thread_local std::vector<detail::FloatDiff> pairs;
        pairs.clear();
        for (std::size_t j : set) pairs.push_back({logits[j], m});
        detail::encloseNormalisedExps(tDiffs.fill(logits, set, m), precision, out.data(),
                                      pairs.data());
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
  std::vector<Certified> gates(logits.size());
  for (auto& g : gates) {
    g.range = {BigFloat(2), BigFloat(2)};  // exact zero, the default value of BigFloat
  }
  for (std::size_t t = 0; t < set.size(); ++t) gates[set[t]] = std::move(kept[t]);
  return gates;
}

}  // namespace moe::oracle::certified
