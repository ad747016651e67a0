// Shrinking a layer violation: greedy, each step one smaller case, kept when the kernel
// still shows the same kind and tag (delta debugging's rule: a change that keeps the
// failure is not its cause).
#include "moe/fuzz/layer_shrink.hpp"

#include <algorithm>
#include <chrono>

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

LayerCase layerExperts(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.experts = n;
  const auto E = static_cast<size_t>(c.experts), N = static_cast<size_t>(n),
             H = static_cast<size_t>(c.hidden), I = static_cast<size_t>(c.intermediate);
  s.logits.clear();
  for (int32_t t = 0; t < c.tokens; ++t) {
    const auto row = c.logits.begin() + static_cast<int64_t>(t * E);
    s.logits.insert(s.logits.end(), row, row + static_cast<int64_t>(N));
  }
  s.w13.resize(N * 2 * I * H);
  s.w2.resize(N * H * I);
  if (s.family && !s.family->bias.empty()) s.family->bias.resize(N);
  return s;
}

LayerCase layerHidden(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.hidden = n;
  const auto H = static_cast<size_t>(c.hidden), N = static_cast<size_t>(n),
             I = static_cast<size_t>(c.intermediate), E = static_cast<size_t>(c.experts);
  s.x.clear();
  for (int32_t t = 0; t < c.tokens; ++t) {
    const auto row = c.x.begin() + static_cast<int64_t>(t * H);
    s.x.insert(s.x.end(), row, row + static_cast<int64_t>(N));
  }
  s.w13.clear();
  for (size_t r = 0; r < E * 2 * I; ++r) {
    const auto row = c.w13.begin() + static_cast<int64_t>(r * H);
    s.w13.insert(s.w13.end(), row, row + static_cast<int64_t>(N));
  }
  s.w2.clear();
  for (size_t e = 0; e < E; ++e) {
    const auto rows = c.w2.begin() + static_cast<int64_t>(e * H * I);
    s.w2.insert(s.w2.end(), rows, rows + static_cast<int64_t>(N * I));
  }
  return s;
}

LayerCase layerIntermediate(const LayerCase& c, int32_t n) {
  LayerCase s = c;
  s.intermediate = n;
  const auto H = static_cast<size_t>(c.hidden), N = static_cast<size_t>(n),
             I = static_cast<size_t>(c.intermediate), E = static_cast<size_t>(c.experts);
  s.w13.clear();
  for (size_t e = 0; e < E; ++e) {
    for (size_t half = 0; half < 2; ++half) {  // W1's first n rows, then W3's
      const auto rows = c.w13.begin() + static_cast<int64_t>((e * 2 * I + half * I) * H);
      s.w13.insert(s.w13.end(), rows, rows + static_cast<int64_t>(N * H));
    }
  }
  s.w2.clear();
  for (size_t r = 0; r < E * H; ++r) {
    const auto row = c.w2.begin() + static_cast<int64_t>(r * I);
    s.w2.insert(s.w2.end(), row, row + static_cast<int64_t>(N));
  }
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
                 Judge& routeJudge, double seconds) {
  using Clock = std::chrono::steady_clock;
  if (!result.violation) return;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  const ViolationKind kind = result.violation->kind;
  const std::string tag = result.violation->tag;
  auto tryCase = [&](const LayerCase& s) {
    if (Clock::now() > deadline) return false;
    LayerCaseResult r = runAndJudgeLayer(kernel, s, withRouting, routeJudge);
    if (r.output.stopped || !r.violation || r.violation->kind != kind || r.violation->tag != tag) {
      return false;
    }
    c = s;
    result = std::move(r);
    return true;
  };
  bool progress = seconds > 0;
  while (progress && Clock::now() < deadline) {
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
