#include "moe/fuzz/violation_kind.hpp"

#include <array>
#include <utility>

namespace moe::fuzz {

namespace {

// The one name table. The spellings are an interface (scripts grep signatures): never
// rename one.
constexpr std::array<std::pair<ViolationKind, std::string_view>, 37> kNames = {{
    {ViolationKind::kNone, "none"},
    {ViolationKind::kIdOutOfRange, "id-out-of-range"},
    {ViolationKind::kIdRepeated, "id-repeated"},
    {ViolationKind::kSlotCount, "slot-count"},
    {ViolationKind::kEmptySlot, "empty-slot"},
    {ViolationKind::kGateNonfinite, "gate-nonfinite"},
    {ViolationKind::kTieHigherIndex, "tie-higher-index"},
    {ViolationKind::kKeptSet, "kept-set"},
    {ViolationKind::kBeatenKept, "beaten-kept"},
    {ViolationKind::kSlotOrder, "slot-order"},
    {ViolationKind::kGateError, "gate-error"},
    {ViolationKind::kBatchVariance, "batch-variance"},
    {ViolationKind::kCrash, "crash"},
    {ViolationKind::kHang, "hang"},
    {ViolationKind::kOutOfBoundsWrite, "out-of-bounds-write"},
    {ViolationKind::kBadStatus, "bad-status"},
    {ViolationKind::kException, "exception"},
    {ViolationKind::kKeptGroup, "kept-group"},
    {ViolationKind::kGroupTieOrder, "group-tie-order"},
    {ViolationKind::kBiasedKey, "biased-key"},
    {ViolationKind::kGateBias, "gate-bias"},
    {ViolationKind::kGateScale, "gate-scale"},
    {ViolationKind::kGateRenorm, "gate-renorm"},
    {ViolationKind::kBadParamsAccepted, "bad-params-accepted"},
    {ViolationKind::kBadParamsWritten, "bad-params-written"},
    {ViolationKind::kBadParamsWrongStatus, "bad-params-wrong-status"},
    {ViolationKind::kExpertOutput, "expert-output"},
    {ViolationKind::kCombineGate, "combine-gate"},
    {ViolationKind::kMissingExpert, "missing-expert"},
    {ViolationKind::kExtraExpert, "extra-expert"},
    {ViolationKind::kLayerNonfinite, "layer-nonfinite"},
    {ViolationKind::kDroppedSlot, "dropped-slot"},
    {ViolationKind::kDuplicatedSlot, "duplicated-slot"},
    {ViolationKind::kWrongExpert, "wrong-expert"},
    {ViolationKind::kBadPadding, "bad-padding"},
    {ViolationKind::kCapacityOrder, "capacity-order"},
    {ViolationKind::kRowsCount, "rows-count"},
}};

}  // namespace

std::string_view kindName(ViolationKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<ViolationKind> kindFromName(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

bool isCallFault(ViolationKind kind) {
  return kind == ViolationKind::kCrash || kind == ViolationKind::kHang ||
         kind == ViolationKind::kOutOfBoundsWrite || kind == ViolationKind::kBadStatus ||
         kind == ViolationKind::kException || kind == ViolationKind::kBadParamsAccepted ||
         kind == ViolationKind::kBadParamsWritten || kind == ViolationKind::kBadParamsWrongStatus;
}

bool isTokenKind(ViolationKind kind) {
  return kind != ViolationKind::kNone && kind != ViolationKind::kBatchVariance &&
         !isCallFault(kind);
}

}  // namespace moe::fuzz
