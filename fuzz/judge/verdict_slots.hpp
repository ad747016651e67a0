// What judgeToken (moe_route_v1) and judgeFamilyToken (moe_route_v2) share: how a violation
// is made, and the check of the slots' structure, which is the same for both ABIs but for
// the number of slots owed (min(k, E) or min(k, eligible)).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

Verdict violation(ViolationKind kind, std::string certificate, double margin = 0);

// The slots owed and how a certificate names them: n, "min(k, E)" or "min(k, eligible)",
// and what follows the name in a certificate (the family's parameters, or nothing).
struct SlotsOwed {
  int32_t n;
  std::string_view name;
  std::string context;
};

// Structure of one token's k slots over E experts: the first n hold distinct ids in
// [0, E) (when the row is real), the rest are empty (-1) with gate 0. With finiteGates,
// also that each filled slot's gate is finite and >= 0 (the softmax router's gates always
// are; a family's scale may be negative). `seen` is scratch: on success, seen[e] is 1
// exactly for the ids in the slots.
std::optional<Verdict> checkSlots(int32_t experts, int32_t k, const SlotsOwed& owed,
                                  std::span<const int32_t> ids, std::span<const float> gates,
                                  bool real, bool finiteGates, std::vector<uint8_t>& seen);

}  // namespace moe::fuzz
