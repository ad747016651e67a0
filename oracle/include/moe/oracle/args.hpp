#pragma once
// The checked entry point for router-level requests. The Lean definitions are total in k
// and E (k = 0 keeps nothing, k > E keeps E, E = 0 is empty) and the transliterations
// follow Lean; a request to route tokens, however, needs at least one expert and a sensible
// k, and gets a clear message otherwise.
#include <cstdint>
#include <string>

#include "moe/oracle/error.hpp"

namespace moe::oracle {

enum class KPolicy {
  kLean,    // any k >= 0 (k = 0 keeps nothing, k > E keeps all E), as the spec allows
  kStrict,  // 1 <= k <= E, what a router serving a model is asked for
};

struct RoutingArgs {
  std::size_t experts = 0;
  std::size_t k = 0;

  // Validates a request (signed, as the C ABI passes int32); throws SpecError naming the
  // offending value.
  static RoutingArgs check(std::int64_t experts, std::int64_t k, KPolicy policy) {
    if (experts <= 0) {
      throw SpecError("routing request needs at least one expert, got E = " +
                      std::to_string(experts));
    }
    if (k < 0) throw SpecError("k must be >= 0, got k = " + std::to_string(k));
    if (policy == KPolicy::kStrict && (k == 0 || k > experts)) {
      throw SpecError("k must be in 1..E = " + std::to_string(experts) +
                      ", got k = " + std::to_string(k));
    }
    return {static_cast<std::size_t>(experts), static_cast<std::size_t>(k)};
  }
};

}  // namespace moe::oracle
