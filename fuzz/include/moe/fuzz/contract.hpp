// What a router promises (docs/interfaces.md, "Contract JSON fields"). A library without
// moe_route_v1_contract gets the defaults below; absent fields get them too.
#pragma once

#include <string>
#include <string_view>

namespace moe::fuzz {

enum class SelectsOn { kLogits, kProbabilities };
enum class SlotOrder { kRank, kAny };

// |g - exact| <= spec32Factor * |g_spec32 - exact| + ulp * ulp32(exact) (+ the verdict's
// analytic floor, docs/fuzz.md "Gate budget").
struct GateBudget {
  double spec32Factor = 2.0;
  double ulp = 4.0;
};

struct Contract {
  std::string abi = "moe_route_v1";
  std::string name;
  SelectsOn selectsOn = SelectsOn::kProbabilities;
  SlotOrder slotOrder = SlotOrder::kAny;
  bool batchInvariant = false;
  std::string compute = "binary32";
  double expMaxUlp = 1.0;  // c in the probability budget (docs/fuzz.md)
  GateBudget gateBudget;
  std::string nonfiniteRows;
};

// Parses the contract text; absent fields keep their defaults. Throws std::invalid_argument
// with the reason on text that is not a JSON object or on a field of the wrong type/value.
Contract parseContract(std::string_view json);
std::string contractToJSON(const Contract& c);

}  // namespace moe::fuzz
