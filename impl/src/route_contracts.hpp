// The contract JSON each built-in router publishes (fields: route_abi.h).
#pragma once

#include <string>
#include <string_view>

namespace moe::detail {

// kFamily: moe_route_v2's contract (the routing family; no "selects_on").
enum class RouteMode { kProbs, kLogits, kFamily };

struct ContractFacts {
  std::string_view name;
  RouteMode mode;
  double expMaxUlp;  // measured by tests/impl (exp ulp test), with margin
  int gateUlp;       // derived in docs/impl.md ("Gate budget")
};

std::string contractJson(const ContractFacts& facts);

}  // namespace moe::detail
