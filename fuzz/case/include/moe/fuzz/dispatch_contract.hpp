// What a dispatch kernel promises (moe_dispatch_v1_contract; docs/fuzz.md "The dispatch
// door"), read with the same schema as a router's (docs/contract.schema.json): "abi":
// "moe_dispatch_v1", "name", "within_expert_order" and "shapes" (tokens, k, experts, block,
// capacity). A router's fields are refused here, and the dispatch fields in a router's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

inline constexpr std::string_view kAbiDispatchV1 = "moe_dispatch_v1";

// Within one expert's list: increasing slot order (the ABI's default), or any order.
enum class WithinExpertOrder { kSlot, kAny };

// The shapes a dispatch run draws; an empty set is the fuzzer's own range.
struct DispatchShapes {
  IntSet tokens, k, experts, block;
  IntSet capacity;  // -1 is no limit; empty: -1 and any capacity
  bool any() const {
    return tokens.empty() && k.empty() && experts.empty() && block.empty() && capacity.empty();
  }
};

struct DispatchContract {
  std::string name;
  WithinExpertOrder order = WithinExpertOrder::kSlot;
  DispatchShapes shapes;
};

// Parses a moe_dispatch_v1 contract; absent fields keep their defaults. Throws
// std::invalid_argument naming the problem (an unknown key with the nearest known one, a
// router's field, a value outside the schema's range).
DispatchContract parseDispatchContract(std::string_view json);
DispatchContract parseDispatchContractJSON(const nlohmann::json& json);
nlohmann::json dispatchContractJSON(const DispatchContract& c);
const char* withinExpertOrderName(WithinExpertOrder o);

}  // namespace moe::fuzz
