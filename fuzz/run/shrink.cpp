#include "moe/fuzz/shrink.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/run_loop.hpp"

namespace moe::fuzz {

namespace {

class Shrinker {
 public:
  Shrinker(Judge& judge, const Router& router, Case& c, CaseResult& r, double seconds,
           const ShrinkLimits& limits, const volatile std::sig_atomic_t* stop)
      : judge_(judge),
        router_(router),
        c_(c),
        r_(r),
        limits_(limits),
        kind_(r.violation->kind),
        tag_(r.violation->tag),
        shape_(degenerateShape(c)),
        tieEvidence_(showsTiedGates(c, r)),
        deadline_(seconds, stop) {}

  ShrinkStats run() {
    for (int round = 0; round < 8; ++round) {
      const size_t before = size();
      const int32_t kBefore = c_.k;
      shrinkTokens();
      shrinkGroups();
      shrinkExperts();
      lowerK();
      simplifyLogits();
      simplifyBias();
      if (expired() || (size() == before && c_.k == kBefore && !simplified_)) break;
      simplified_ = false;
    }
    return stats_;
  }

 private:
  size_t size() const { return c_.logits.size(); }
  bool expired() {
    if (!deadline_.passed()) return false;
    stats_.timedOut = true;
    return true;
  }

  // Runs the candidate; keeps it when the same kind reproduces.
  bool tryCase(Case cand) {
    if (expired()) return false;
    cand.split = std::clamp(cand.split, 0, cand.tokens);
    // A fault found on a real shape never shrinks into an empty batch, E = 0 or k = 0 (nor
    // the other way): such a case would be another finding, and could hide this one.
    if (degenerateShape(cand) != shape_) return false;
    if (!caseInside(cand, limits_.space, limits_.families ? &*limits_.families : nullptr)) {
      return false;
    }
    ++stats_.runs;
    CaseResult again = judge_.run(router_, cand);
    if (!again.violation || again.violation->kind != kind_ || again.violation->tag != tag_) {
      return false;
    }
    if (tieEvidence_ && !showsTiedGates(cand, again)) return false;
    c_ = std::move(cand);
    r_ = std::move(again);
    return true;
  }

  Case withTokens(int32_t first, int32_t count) const {
    Case cand = c_;
    cand.tokens = count;
    const auto E = static_cast<size_t>(c_.experts);
    cand.logits.assign(c_.logits.begin() + first * E, c_.logits.begin() + (first + count) * E);
    cand.split = std::max(0, c_.split - first);
    return cand;
  }

  Case withoutTokens(int32_t first, int32_t count) const {
    Case cand = c_;
    const auto E = static_cast<size_t>(c_.experts);
    cand.tokens = c_.tokens - count;
    cand.logits.erase(cand.logits.begin() + first * E, cand.logits.begin() + (first + count) * E);
    if (c_.split > first) cand.split = std::max(first, c_.split - count);
    return cand;
  }

  // The violating token alone, then halves, quarters, ... of the batch removed (a bug that
  // needs 4,096 tokens keeps them: no candidate without them reproduces). Bounded, so a
  // large batch that cannot shrink leaves time for the experts and logits.
  void shrinkTokens() {
    if (c_.tokens <= 1) return;
    const int32_t t = r_.violation->token;
    if (isTokenKind(kind_) && t >= 0 && t < c_.tokens && tryCase(withTokens(t, 1))) return;
    int tries = 0;
    for (int32_t chunk = c_.tokens / 2; chunk >= 1 && tries < 64; chunk /= 2) {
      for (int32_t first = 0; first + chunk <= c_.tokens && c_.tokens > 1 && tries < 64;) {
        ++tries;
        if (!tryCase(withoutTokens(first, chunk))) first += chunk;
      }
    }
  }

  // The spec's rank of every expert of row t on the logits (ties to the lower index).
  std::vector<int32_t> logitRanks(int32_t t) const {
    const auto x = c_.row(t);
    std::vector<int32_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
    std::vector<int32_t> rank(x.size());
    for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<int32_t>(r);
    return rank;
  }

  Case withoutExperts(int32_t first, int32_t count, int32_t k) const {
    Case cand = c_;
    cand.experts = c_.experts - count;
    cand.k = k;
    if (cand.family && !cand.family->bias.empty()) {  // the bias loses the same columns
      auto& b = cand.family->bias;
      b.erase(b.begin() + first, b.begin() + first + count);
    }
    cand.logits.clear();
    for (int32_t t = 0; t < c_.tokens; ++t) {
      const auto row = c_.row(t);
      cand.logits.insert(cand.logits.end(), row.begin(), row.begin() + first);
      cand.logits.insert(cand.logits.end(), row.begin() + first + count, row.end());
    }
    return cand;
  }

  // A family case with groups loses whole groups (E stays divisible by G): G - 1 groups,
  // topk_groups kept (at most G - 1) or one less when the group removed was one it kept.
  void shrinkGroups() {
    if (!c_.family || c_.family->groups <= 1) return;
    for (int32_t h = c_.family->groups - 1; h >= 0 && c_.family->groups > 1; --h) {
      if (expired()) return;
      const Family f = *c_.family;
      const int32_t size = c_.experts / f.groups;
      Case cand = withoutExperts(h * size, size, c_.k);
      cand.family->groups = f.groups - 1;
      cand.family->topkGroups = std::min(f.topkGroups, f.groups - 1);
      if (tryCase(cand)) continue;
      if (f.topkGroups > 1) {
        cand.family->topkGroups = std::min(f.topkGroups - 1, f.groups - 1);
        tryCase(std::move(cand));
      }
    }
  }

  void shrinkExperts() {
    // Groups fix E's divisors: a family case with groups keeps its experts.
    if (c_.family && c_.family->groups != 1) return;
    for (int32_t chunk = c_.experts / 2; chunk >= 1; chunk /= 2) {
      for (int32_t first = 0; first + chunk <= c_.experts && c_.experts > 1;) {
        if (expired()) return;
        // k lowered by the kept experts removed keeps the kept boundary in place; k kept
        // (but below E when it was) keeps the rest of the ranking.
        const int32_t t = std::clamp(r_.violation->token, 0, std::max(0, c_.tokens - 1));
        int32_t keptRemoved = 0;
        if (c_.tokens > 0) {
          const auto rank = logitRanks(t);
          const int32_t n = std::min(c_.k, c_.experts);
          for (int32_t e = first; e < first + chunk; ++e) keptRemoved += rank[e] < n ? 1 : 0;
        }
        const int32_t newE = c_.experts - chunk;
        const int32_t kAbove = c_.k - c_.experts;  // k's place relative to E, kept when >= 0
        const int32_t kBoundary = kAbove >= 0 ? newE + kAbove : c_.k - keptRemoved;
        const int32_t kSame = kAbove >= 0 ? newE + kAbove : std::min(c_.k, std::max(0, newE - 1));
        if (tryCase(withoutExperts(first, chunk, std::max(0, kBoundary)))) continue;
        if (kSame != kBoundary && tryCase(withoutExperts(first, chunk, kSame))) continue;
        first += chunk;
      }
    }
  }

  void lowerK() {
    for (int32_t k = 0; k < c_.k; ++k) {
      Case cand = c_;
      cand.k = k;
      if (tryCase(std::move(cand))) return;
      if (expired()) return;
    }
  }

  // True when the violating token has two tied experts (the same logit bits, and the same
  // bias) that the router kept both, with different gates: the evidence of a
  // position-dependent exp or sum, which a case keeping only one of them would hide.
  static bool showsTiedGates(const Case& c, const CaseResult& r) {
    if (!r.violation) return false;
    const int32_t t = r.violation->token;
    const auto k = static_cast<size_t>(c.k);
    if (t < 0 || t >= c.tokens || r.output.ids.size() < (t + 1) * k) return false;
    const auto x = c.row(t);
    const auto bias = [&](int32_t e) {
      return c.family && !c.family->bias.empty() ? bitsOf(c.family->bias[e]) : 0u;
    };
    for (size_t a = 0; a < k; ++a) {
      for (size_t b = a + 1; b < k; ++b) {
        const int32_t i = r.output.ids[t * k + a], j = r.output.ids[t * k + b];
        if (i < 0 || j < 0 || i >= c.experts || j >= c.experts || i == j) continue;
        if (bitsOf(x[i]) == bitsOf(x[j]) && bias(i) == bias(j) &&
            bitsOf(r.output.gates[t * k + a]) != bitsOf(r.output.gates[t * k + b])) {
          return true;
        }
      }
    }
    return false;
  }

  // The bias simplified as the logits are: all zero first (a finding that does not need it
  // says so by losing it), then each distinct value everywhere it occurs.
  void simplifyBias() {
    if (!c_.family || c_.family->bias.empty()) return;
    {
      Case cand = c_;
      std::fill(cand.family->bias.begin(), cand.family->bias.end(), 0.0f);
      if (cand.family->bias != c_.family->bias && tryCase(std::move(cand))) {
        simplified_ = true;
        return;
      }
    }
    std::vector<uint32_t> values;
    for (float b : c_.family->bias) {
      if (std::find(values.begin(), values.end(), bitsOf(b)) == values.end()) {
        values.push_back(bitsOf(b));
      }
      if (values.size() > 64) break;
    }
    for (uint32_t vb : values) {
      for (float w : simplerThan(floatOf(vb))) {
        if (expired()) return;
        Case cand = c_;
        for (float& b : cand.family->bias) {
          if (bitsOf(b) == vb) b = w;
        }
        if (tryCase(std::move(cand))) {
          simplified_ = true;
          break;
        }
      }
    }
  }

  // Simpler values than v, simplest first.
  static std::vector<float> simplerThan(float v) {
    std::vector<float> out = {0.0f, 1.0f, -1.0f, 2.0f, -2.0f};
    if (std::isfinite(v)) {
      out.push_back(std::trunc(v));
      for (int bits = 1; bits < 23; ++bits) {
        const uint32_t mask = ~((uint32_t{1} << (23 - bits)) - 1);
        out.push_back(floatOf(bitsOf(v) & mask));
      }
    }
    std::vector<float> unique;
    for (float w : out) {
      if (bitsOf(w) == bitsOf(v)) break;  // nothing after v itself is simpler
      if (std::none_of(unique.begin(), unique.end(),
                       [&](float u) { return bitsOf(u) == bitsOf(w); })) {
        unique.push_back(w);
      }
    }
    return unique;
  }

  void simplifyLogits() {
    std::vector<uint32_t> values;
    for (float x : c_.logits) {
      if (std::find(values.begin(), values.end(), bitsOf(x)) == values.end()) {
        values.push_back(bitsOf(x));
      }
      if (values.size() > 256) break;  // a large case: the first values are enough
    }
    for (uint32_t vb : values) {
      for (float w : simplerThan(floatOf(vb))) {
        if (expired()) return;
        Case cand = c_;
        bool present = false;
        for (float& x : cand.logits) {
          if (bitsOf(x) == vb) {
            x = w;
            present = true;
          }
        }
        if (!present) break;
        if (tryCase(std::move(cand))) {
          simplified_ = true;
          break;
        }
      }
    }
  }

  Judge& judge_;
  const Router& router_;
  Case& c_;
  CaseResult& r_;
  const ShrinkLimits& limits_;
  ViolationKind kind_;
  std::string tag_;         // a crash by SIGSEGV does not shrink into one by SIGABRT
  std::string_view shape_;  // the degenerate shape class, kept (degenerateShape)
  bool tieEvidence_;        // tied experts kept with different gates: kept so
  ShrinkDeadline deadline_;
  ShrinkStats stats_;
  bool simplified_ = false;
};

}  // namespace

ShrinkStats shrinkViolation(Judge& judge, const Router& router, Case& c, CaseResult& r,
                            double seconds, const ShrinkLimits& limits,
                            const volatile std::sig_atomic_t* stop) {
  if (!r.violation || !(seconds > 0)) return {};
  return Shrinker(judge, router, c, r, seconds, limits, stop).run();
}

}  // namespace moe::fuzz
