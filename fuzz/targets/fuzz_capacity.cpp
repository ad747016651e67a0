// fuzz_capacity: per-unit capacity and balance (differential, impl vs oracle). The ids come
// from a built-in router on the case's logits; units are [0, U), [U, 2U), ... with U from
// the case's split. Per unit: impl's switchCapacity vs Lean's switchCapacity (k = 1,
// factor 1), impl's keep mask vs Lean's capacityKeeps on the unit's non-empty slots in
// token-major order, impl's switchBalance (binary64) vs Lean's exact switchBalance.
#include <fmt/format.h>
#include <gmpxx.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "moe/fuzz/builtin_layer.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/oracle/capacity.hpp"
#include "moe/oracle/softmax.hpp"
#include "target_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  static const auto router = openRouter("scalar-probs");
  Case c = decodeCase(std::span<const uint8_t>(data, size), maxExpertsFromEnv());
  for (float& x : c.logits) {  // capacity is about dispatch: keep every row real
    if (!std::isfinite(x)) x = 0.0f;
  }
  RouteOutput out = router->route(c.tokens, c.experts, c.k, c.logits, 1);
  if (out.abstained) return 0;
  const int64_t U = std::max<int32_t>(1, c.split);
  for (int64_t first = 0; first < c.tokens; first += U) {
    const int64_t n = std::min<int64_t>(U, c.tokens - first);
    std::span<const int32_t> ids(out.ids.data() + first * c.k, static_cast<size_t>(n * c.k));
    // Capacity: Lean's switchCapacity E n = ceil(n / E) is the k = 1, factor 1 case.
    const int64_t cImpl = builtinSwitchCapacity(c.experts, n, 1, 1.0);
    const size_t cLean = moe::oracle::switchCapacity(c.experts, static_cast<size_t>(n));
    if (cImpl != static_cast<int64_t>(cLean)) {
      propertyFailure("fuzz_capacity", "switch-capacity", c,
                      fmt::format("unit at {}: impl {} vs Lean {}", first, cImpl, cLean));
    }
    // Keep mask with a capacity from the variant byte (0..n), against Lean's capacityKeeps.
    const int64_t C = c.variant % (n + 1);
    const auto keep = builtinCapacityKeeps(C, ids, c.k, c.experts);
    std::vector<size_t> group;
    std::vector<size_t> slotOf;
    for (size_t s = 0; s < ids.size(); ++s) {
      if (ids[s] >= 0) {
        group.push_back(static_cast<size_t>(ids[s]));
        slotOf.push_back(s);
      }
    }
    const auto lean = moe::oracle::capacityKeeps(static_cast<size_t>(C), group);
    for (size_t g = 0; g < group.size(); ++g) {
      if (static_cast<bool>(keep[slotOf[g]]) != lean[g]) {
        propertyFailure(
            "fuzz_capacity", "capacity-keeps", c,
            fmt::format("unit at {}, C = {}: slot {} (expert {}) impl keep {} vs "
                        "Lean {}",
                        first, C, slotOf[g], group[g], int(keep[slotOf[g]]), bool(lean[g])));
      }
    }
    for (size_t s = 0; s < ids.size(); ++s) {
      if (ids[s] < 0 && keep[s]) {
        propertyFailure("fuzz_capacity", "capacity-keeps", c, "an empty slot was kept");
      }
    }
    // Balance (top-1 = slot 0), with the binary32 spec's probabilities.
    if (c.k == 0) continue;
    std::vector<float> probs;
    std::vector<moe::oracle::BalanceToken> tokens;
    for (int64_t t = first; t < first + n; ++t) {
      const auto p = moe::oracle::softmaxVecSpec(c.row(static_cast<int32_t>(t)));
      probs.insert(probs.end(), p.begin(), p.end());
      std::vector<mpq_class> q;
      q.reserve(p.size());
      for (float v : p) q.emplace_back(static_cast<double>(v));
      tokens.emplace_back(static_cast<size_t>(out.ids[t * c.k]), std::move(q));
    }
    const double impl = builtinSwitchBalance(ids, c.k, probs, c.experts);
    const mpq_class exact = moe::oracle::switchBalance(static_cast<size_t>(c.experts), tokens);
    const double e = exact.get_d();
    // impl sums n probabilities per expert and E products in binary64: relative error
    // <= (n + E + 4) 2^-53 of the sum of |terms| (all terms are >= 0, so of the result).
    const double tol = (static_cast<double>(n) + c.experts + 4) * 0x1p-52 * std::fabs(e) + 1e-300;
    if (!(std::fabs(impl - e) <= tol)) {
      propertyFailure("fuzz_capacity", "switch-balance", c,
                      fmt::format("unit at {}: impl {:.17g} vs exact {:.17g} (tolerance {:.3g})",
                                  first, impl, e, tol));
    }
  }
  return 0;
}
