// Shrinking a layer violation: greedy, each step one smaller case, kept when the kernel
// still shows the same kind and tag (delta debugging's rule: a change that keeps the
// failure is not its cause).
#include "moe/fuzz/layer_shrink.hpp"

#include <algorithm>
#include <vector>

#include "moe/fuzz/run_loop.hpp"

namespace moe::fuzz {

LayerCaseResult runAndJudgeLayer(const LayerKernel& kernel, const LayerCase& c, bool withRouting,
                                 Judge& routeJudge) {
  return judgeLayerOutput(c, kernel.run(c, withRouting), kernel.contract(), routeJudge,
                          kernel.rerun(withRouting));
}

LayerCase layerTokens(const LayerCase& c, int32_t from, int32_t to) {
  LayerCase s = c;
  s.tokens = to - from;
  const auto H = static_cast<size_t>(c.hidden), E = static_cast<size_t>(c.experts);
  s.x.assign(c.x.begin() + static_cast<int64_t>(from * H),
             c.x.begin() + static_cast<int64_t>(to * H));
  s.logits.assign(c.logits.begin() + static_cast<int64_t>(from * E),
                  c.logits.begin() + static_cast<int64_t>(to * E));
  return s;
}

namespace {

// The case's sizes, as indices into its arrays take them.
struct Sizes {
  size_t tokens, experts, hidden, intermediate;
};
Sizes sizesOf(const LayerCase& c) {
  return {static_cast<size_t>(c.tokens), static_cast<size_t>(c.experts),
          static_cast<size_t>(c.hidden), static_cast<size_t>(c.intermediate)};
}

// The first `keep` values of each of the `runs` runs of `stride` values in v: a row-major
// array cut along its last axis (or, with a run per outer index, along an inner one).
std::vector<float> firstOfEach(const std::vector<float>& v, size_t runs, size_t stride,
                               size_t keep) {
  std::vector<float> out;
  out.reserve(runs * keep);
  for (size_t r = 0; r < runs; ++r) {
    const auto run = v.begin() + static_cast<int64_t>(r * stride);
    out.insert(out.end(), run, run + static_cast<int64_t>(keep));
  }
  return out;
}

}  // namespace

LayerCase layerExperts(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.experts = n;
  const auto [T, E, H, I] = sizesOf(c);
  const auto N = static_cast<size_t>(n);
  s.logits = firstOfEach(c.logits, T, E, N);
  s.w13.resize(N * 2 * I * H);
  s.w2.resize(N * H * I);
  if (s.family && !s.family->bias.empty()) s.family->bias.resize(N);
  return s;
}

LayerCase layerHidden(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.hidden = n;
  const auto [T, E, H, I] = sizesOf(c);
  const auto N = static_cast<size_t>(n);
  s.x = firstOfEach(c.x, T, H, N);
  s.w13 = firstOfEach(c.w13, E * 2 * I, H, N);
  s.w2 = firstOfEach(c.w2, E, H * I, N * I);  // each expert's first n rows
  return s;
}

LayerCase layerIntermediate(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.intermediate = n;
  const auto [T, E, H, I] = sizesOf(c);
  const auto N = static_cast<size_t>(n);
  s.w13 = firstOfEach(c.w13, E * 2, I * H, N * H);  // W1's first n rows, then W3's
  s.w2 = firstOfEach(c.w2, E * H, I, N);
  return s;
}

namespace {

// A family whose groups divide n experts and whose k fits (else the cut leaves the domain).
bool expertsCutFits(const LayerCase& c, int32_t n) {
  if (n < c.k || n < 1) return false;
  if (!c.family) return true;
  return c.family->groups <= 1 ||
         (n % c.family->groups == 0 && familyEligible(*c.family, n) >= std::min(c.k, n));
}

}  // namespace

void shrinkLayer(const LayerKernel& kernel, LayerCase& c, bool withRouting, LayerCaseResult& result,
                 Judge& routeJudge, double seconds, const volatile std::sig_atomic_t* stop) {
  if (!result.violation) return;
  const ShrinkDeadline deadline(seconds, stop);
  const ViolationKind kind = result.violation->kind;
  const std::string tag = result.violation->tag;
  auto tryCase = [&](const LayerCase& s) {
    if (deadline.passed()) return false;
    LayerCaseResult r = runAndJudgeLayer(kernel, s, withRouting, routeJudge);
    if (r.output.stopped || !r.violation || r.violation->kind != kind || r.violation->tag != tag) {
      return false;
    }
    c = s;
    result = std::move(r);
    return true;
  };
  bool progress = seconds > 0;
  while (progress && !deadline.passed()) {
    progress = false;
    const int32_t t = result.violation->token;
    if (c.tokens > 1 && t >= 0 && t < c.tokens && tryCase(layerTokens(c, t, t + 1))) {
      progress = true;
      continue;
    }
    if (c.tokens > 1 && (tryCase(layerTokens(c, 0, c.tokens / 2)) ||
                         tryCase(layerTokens(c, c.tokens / 2, c.tokens)))) {
      progress = true;
      continue;
    }
    if (c.tokens > 1 && c.tokens <= 64 && tryCase(layerTokens(c, 0, c.tokens - 1))) {
      progress = true;
      continue;
    }
    if (c.family && tryCase([&] {
          LayerCase s = c;
          s.family.reset();
          return s;
        }())) {
      progress = true;
      continue;
    }
    for (int32_t n : {c.experts / 2, c.experts - 1}) {
      if (n < c.experts && expertsCutFits(c, n) && tryCase(layerExperts(c, n))) {
        progress = true;
        break;
      }
    }
    if (progress) continue;
    if (c.k > 1) {
      LayerCase s = c;
      s.k = c.k - 1;
      if (tryCase(s)) {
        progress = true;
        continue;
      }
    }
    for (int32_t n : {c.hidden / 2, c.hidden - 1}) {
      if (n >= 1 && n < c.hidden && tryCase(layerHidden(c, n))) {
        progress = true;
        break;
      }
    }
    if (progress) continue;
    for (int32_t n : {c.intermediate / 2, c.intermediate - 1}) {
      if (n >= 1 && n < c.intermediate && tryCase(layerIntermediate(c, n))) {
        progress = true;
        break;
      }
    }
  }
}

}  // namespace moe::fuzz
