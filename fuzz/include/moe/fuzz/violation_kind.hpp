// Every violation kind the fuzzer reports, with the one table of the names users see
// (signatures, --json "kind", reproducers' "kind"). Deduplication, shrinking and the
// keep-going summary key on the enum, never on a spelling.
#pragma once

#include <optional>
#include <string_view>

namespace moe::fuzz {

enum class ViolationKind {
  kNone = 0,
  // Structure of one token's slots.
  kIdOutOfRange,
  kIdRepeated,
  kSlotCount,
  kEmptySlot,
  kGateNonfinite,
  // Selection and slot order.
  kTieHigherIndex,
  kKeptSet,
  kBeatenKept,
  kSlotOrder,
  // Gates.
  kGateError,
  // Across calls.
  kBatchVariance,
};

// "tie-higher-index", "kept-set", ... ("none" for kNone).
std::string_view kindName(ViolationKind kind);
// The inverse of kindName; nullopt for a name no kind has.
std::optional<ViolationKind> kindFromName(std::string_view name);
// True for kinds about one token (the shrinker may cut the batch down to that token).
bool isTokenKind(ViolationKind kind);

}  // namespace moe::fuzz
