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
  // The call itself: found by the isolated runner or the status check.
  kCrash,
  kHang,
  kOutOfBoundsWrite,
  kBadStatus,
  // A Python function under test raised instead of returning (the Python door).
  kException,
  // The routing family (moe_route_v2; docs/fuzz.md "The routing family").
  // Groups: a kept expert's group is beaten by topk_groups groups beyond the budget, or
  // the kept experts span more than topk_groups groups.
  kKeptGroup,
  // Groups: exactly equal group scores, and the kept group is the higher index.
  kGroupTieOrder,
  // The bias: a displaced eligible expert beats a kept one on the biased keys s + b beyond
  // the budget.
  kBiasedKey,
  // Gates, by the cause that explains them: the bias added to the gates; the scale missing
  // or applied where it cancels (before renormalising); renormalised over another set or
  // not as asked. Any other gate beyond its budget stays gate-error.
  kGateBias,
  kGateScale,
  kGateRenorm,
  // Parameters outside the domain: routed (status 0), EBADPARAMS with outputs written, or
  // another status (say EUNSUPPORTED: route_abi.h checks the domain first).
  kBadParamsAccepted,
  kBadParamsWritten,
  kBadParamsWrongStatus,
  // The fused layer (moe_layer_v1; docs/fuzz.md "The fused layer"): y beyond its derived
  // budget around the spec's sparse forward. One expert's output wrong (named by the
  // experiment that isolates it, with the token and coordinate); a kept expert's output
  // weighted by another gate; a kept expert's output missing; an output added that the
  // routing does not keep (or a kept one added twice); y not finite where the binary32
  // evaluation cannot overflow.
  kExpertOutput,
  kCombineGate,
  kMissingExpert,
  kExtraExpert,
  kLayerNonfinite,
  // Dispatch (moe_dispatch_v1; docs/fuzz.md "The dispatch door"): a kept slot missing, a
  // slot listed twice, a slot under another expert's block or experts out of order, padding
  // out of place (or not the value tokens * k, or a list not padded to the block), a slot
  // capacityKeeps drops kept in place of one it keeps, rows or block_expert inconsistent
  // with the list.
  kDroppedSlot,
  kDuplicatedSlot,
  kWrongExpert,
  kBadPadding,
  kCapacityOrder,
  kRowsCount,
};

// "tie-higher-index", "kept-set", ... ("none" for kNone).
std::string_view kindName(ViolationKind kind);
// The inverse of kindName; nullopt for a name no kind has.
std::optional<ViolationKind> kindFromName(std::string_view name);
// True for kinds about one token (the shrinker may cut the batch down to that token).
bool isTokenKind(ViolationKind kind);
// True for faults of the call (crash, hang, out-of-bounds write, bad status, exception):
// there is no output to judge, only the case to replay.
bool isCallFault(ViolationKind kind);

}  // namespace moe::fuzz
