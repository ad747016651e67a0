#include "route_contracts.hpp"

#include <fmt/format.h>

namespace moe::detail {
namespace {

constexpr std::string_view kProbsNonfinite =
    "A row with a NaN logit, a +inf logit, or only -inf logits has all-NaN probabilities, "
    "so every expert ties and the lower indices win: ids 0..min(k,E)-1, gates NaN "
    "(slots past min(k,E): -1 and 0). -inf logits in a row with a finite maximum are "
    "masked experts (probability 0).";

constexpr std::string_view kLogitsNonfinite =
    "A row with a NaN logit: ids 0..min(k,E)-1, gates NaN. A row with a +inf logit (and no "
    "NaN) or only -inf logits: ids by the routing rule (+inf is the largest score, exact "
    "ties to the lower index), gates NaN. -inf logits in a row with a finite maximum are "
    "masked experts (gate 0 when kept). Slots past min(k,E): -1 and 0.";

constexpr std::string_view kFamilyNonfinite =
    "A row with a NaN selection key (a NaN logit or bias, a softmax row with a +inf logit or "
    "only -inf logits, +inf and -inf biases summed) or a NaN group score (a top-2 sum of +inf "
    "and -inf keys): ids 0..n-1 with n = min(k, eligible experts), gates NaN. Otherwise ids "
    "by the routing rule (+inf keys are the largest, exact ties to the lower index) and "
    "gates as the spec evaluates them. Slots past n: -1 and 0.";

std::string familyContractJson(const ContractFacts& facts) {
  return fmt::format(
      "{{\"abi\": \"moe_route_v2\", \"name\": \"{}\", "
      "\"families\": {{\"scores\": [\"softmax\", \"sigmoid\"], \"groups\": true, "
      "\"bias\": true}}, "
      "\"slot_order\": \"rank\", \"batch_invariant\": true, \"compute\": \"binary32\", "
      "\"exp_max_ulp\": {}, \"gate_budget\": {{\"spec32_factor\": 2, \"ulp\": {}}}, "
      "\"nonfinite_rows\": \"{}\"}}",
      facts.name, facts.expMaxUlp, facts.gateUlp, kFamilyNonfinite);
}

}  // namespace

std::string contractJson(const ContractFacts& facts) {
  if (facts.mode == RouteMode::kFamily) return familyContractJson(facts);
  const bool probs = facts.mode == RouteMode::kProbs;
  return fmt::format(
      "{{\"abi\": \"moe_route_v1\", \"name\": \"{}\", \"selects_on\": \"{}\", "
      "\"slot_order\": \"rank\", \"batch_invariant\": true, \"compute\": \"binary32\", "
      "\"exp_max_ulp\": {}, \"gate_budget\": {{\"spec32_factor\": 2, \"ulp\": {}}}, "
      "\"nonfinite_rows\": \"{}\"}}",
      facts.name, probs ? "probabilities" : "logits", facts.expMaxUlp, facts.gateUlp,
      probs ? kProbsNonfinite : kLogitsNonfinite);
}

}  // namespace moe::detail
