// fuzz_layer: moe::Layer (differential and property). A small random layer (shape from
// the case) routes the case's tokens with a built-in router. Checked: dense == sparse bit
// for bit where finite; every token's output is the same bits alone, in the batch and in
// the batch split at case.split; the layer's routing of its own router logits passes the
// verdict; the dense output is within the rounding bound of the exact (MPFR) combination
// of the layer's own gates and expert outputs (oracle combineEnclosure).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "moe/fuzz/builtin_layer.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/oracle/certified/forward.hpp"
#include "target_common.hpp"

namespace {

// Row rowA of a and row rowB of b (row-major, `cols` wide) hold the same bits.
bool sameBits(const std::vector<float>& a, const std::vector<float>& b, int64_t cols, int64_t rowA,
              int64_t rowB) {
  for (int64_t c = 0; c < cols; ++c) {
    if (moe::fuzz::bitsOf(a[rowA * cols + c]) != moe::fuzz::bitsOf(b[rowB * cols + c])) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  Case c = decodeCase(std::span<const uint8_t>(data, size), maxExpertsFromEnv());
  const int64_t E = std::min<int32_t>(c.experts, 16);
  const int64_t d = 1 + c.variant % 8, h = 1 + (c.variant >> 3) % 8;
  const int64_t T = std::min<int32_t>(c.tokens, 8);
  const int64_t k = std::min<int64_t>(c.k, E + 1);
  static const char* kRouters[] = {"scalar-probs", "scalar-logits", "auto-probs", "auto-logits"};
  const char* routerName = kRouters[c.threads % 4];
  const BuiltinLayer layer(d, h, E, k, c.split * 131 + c.variant, routerName);
  std::vector<float> x(static_cast<size_t>(T * d));  // T x d, row-major
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < d; ++i) {
      float v = c.logits[static_cast<size_t>(t * d + i) % c.logits.size()];
      // Keep activations finite.
      x[static_cast<size_t>(t * d + i)] = std::isfinite(v) && std::fabs(v) < 64.0f ? v : 1.0f;
    }
  }
  const std::vector<float> dense = layer.forwardDense(x, T);
  const std::vector<float> sparse = layer.forwardSparse(x, T);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < d; ++j) {
      const float yd = dense[t * d + j], ys = sparse[t * d + j];
      if (std::isfinite(yd) && bitsOf(yd) != bitsOf(ys)) {
        propertyFailure(
            "fuzz_layer", "dense-vs-sparse", c,
            fmt::format("token {} coordinate {}: dense {} sparse {}", t, j, hex32(yd), hex32(ys)));
      }
    }
  }
  const int64_t split = std::clamp<int64_t>(c.split, 0, T);
  if (split > 0 && split < T) {
    const std::span<const float> all(x);
    const std::vector<float> head = layer.forwardDense(all.first(split * d), split);
    const std::vector<float> tail = layer.forwardDense(all.subspan(split * d), T - split);
    for (int64_t t = 0; t < T; ++t) {
      if (!(t < split ? sameBits(dense, head, d, t, t) : sameBits(dense, tail, d, t, t - split))) {
        propertyFailure("fuzz_layer", "batch-split", c,
                        fmt::format("token {} changed when the batch was split at {}", t, split));
      }
    }
  }
  // The routing, judged by the verdict on the layer's own logits.
  const std::vector<float> logits = layer.routerLogits(x, T);
  const BuiltinLayer::Routing routing = layer.route(x, T);
  static const std::unique_ptr<Router> contracts[] = {
      openRouter(kRouters[0]), openRouter(kRouters[1]), openRouter(kRouters[2]),
      openRouter(kRouters[3])};
  const Contract& contract = contracts[c.threads % 4]->contract();
  static Judge judge;
  for (int64_t t = 0; t < T; ++t) {
    std::span<const float> row(logits.data() + t * E, static_cast<size_t>(E));
    std::span<const int32_t> ids(routing.ids.data() + t * k, static_cast<size_t>(k));
    std::span<const float> gates(routing.gates.data() + t * k, static_cast<size_t>(k));
    Verdict v = judge.token(row, static_cast<int32_t>(k), ids, gates, contract);
    if (v.outcome == Outcome::kViolation) {
      propertyFailure("fuzz_layer", "routing-" + std::string(kindName(v.kind)), c, v.certificate);
    }
    // Combine: the layer's dense output vs the exact sum of its own gates times its own
    // expert outputs; binary32 accumulation of E terms errs by <= (E + 1) u sum |g_e y_e|.
    if (!isRealRow(row)) continue;
    std::vector<float> fullGates(static_cast<size_t>(E), 0.0f);
    for (int64_t s = 0; s < std::min(k, E); ++s) fullGates[ids[s]] = gates[s];
    std::vector<std::vector<float>> outs(static_cast<size_t>(E));
    const std::span<const float> token(x.data() + t * d, static_cast<size_t>(d));
    for (int64_t e = 0; e < E; ++e) outs[e] = layer.expertOutput(e, token);
    const auto exact = moe::oracle::certified::combineEnclosure(fullGates, outs);
    for (int64_t j = 0; j < d; ++j) {
      double mag = 0;
      for (int64_t e = 0; e < E; ++e) mag += std::fabs(double(fullGates[e]) * outs[e][j]);
      if (!std::isfinite(mag)) continue;
      const double bound = (E + 2) * 0x1p-24 * mag + 0x1p-140;
      const double lo = exact[j].range.lowerDouble(), hi = exact[j].range.upperDouble();
      const double y = dense[t * d + j];
      if (y < lo - bound || y > hi + bound) {
        propertyFailure("fuzz_layer", "combine", c,
                        fmt::format("token {} coordinate {}: dense {:.9g} but the exact "
                                    "combination is in [{:.17g}, {:.17g}] (bound {:.3g})",
                                    t, j, y, lo, hi, bound));
      }
    }
  }
  return 0;
}
