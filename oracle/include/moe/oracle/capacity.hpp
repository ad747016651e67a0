#pragma once
// Capacity and load balancing (GShard / Switch): the facts capacity_depends_on_devices
// and balance_depends_on_devices, computed per group (work unit) of tokens.
#include <gmpxx.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "moe/oracle/error.hpp"

namespace moe::oracle {

// Lean: Spec.MoE.capacityKeeps — serves capacity_depends_on_devices
// group[t] is the expert token t is routed to; token t is kept when fewer than C earlier
// tokens of the group went to its expert.
inline std::vector<bool> capacityKeeps(std::size_t C, std::span<const std::size_t> group) {
  std::vector<std::size_t> load;
  std::vector<bool> keeps(group.size());
  for (std::size_t t = 0; t < group.size(); ++t) {
    const std::size_t e = group[t];
    if (e >= load.size()) load.resize(e + 1, 0);
    keeps[t] = load[e] < C;
    ++load[e];
  }
  return keeps;
}

// Lean: Spec.MoE.switchCapacity — serves capacity_depends_on_devices
// ceil(n / E) with capacity factor one; E = 0 gives 0, as Lean's Nat division by 0 does.
inline std::size_t switchCapacity(std::size_t E, std::size_t n) {
  return E == 0 ? 0 : n / E + (n % E != 0 ? 1 : 0);
}

// One token of a balancing group: the expert it is routed to and the router's
// probabilities over all E experts.
using BalanceToken = std::pair<std::size_t, std::vector<mpq_class>>;

// Lean: Spec.MoE.switchBalance — serves balance_depends_on_devices
// E * sum_e (fraction of the group's tokens sent to e) * (mean probability of e), exact.
// An empty group gives 0 (Lean's ℚ division by 0 is 0).
inline mpq_class switchBalance(std::size_t E, std::span<const BalanceToken> group) {
  if (group.empty()) return 0;
  std::vector<mpq_class> count(E, 0), probSum(E, 0);
  for (std::size_t t = 0; t < group.size(); ++t) {
    const auto& [expert, probs] = group[t];
    if (expert >= E) {
      throw SpecError("switchBalance: token " + std::to_string(t) + " routed to expert " +
                      std::to_string(expert) + " of " + std::to_string(E));
    }
    requireSameSize("switchBalance: probabilities vs experts", probs.size(), E);
    count[expert] += 1;
    for (std::size_t e = 0; e < E; ++e) probSum[e] += probs[e];
  }
  const mpq_class n(static_cast<unsigned long>(group.size()));
  mpq_class sum = 0;
  for (std::size_t e = 0; e < E; ++e) sum += (count[e] / n) * (probSum[e] / n);
  return mpq_class(static_cast<unsigned long>(E)) * sum;
}

}  // namespace moe::oracle
