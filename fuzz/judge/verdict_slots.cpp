// The slot structure check and the violation maker of both token judges (verdict_slots.hpp).
#include "verdict_slots.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

Verdict violation(ViolationKind kind, std::string certificate, double margin) {
  Verdict v;
  v.outcome = Outcome::kViolation;
  v.kind = kind;
  v.certificate = std::move(certificate);
  v.margin = margin;
  return v;
}

std::optional<Verdict> checkSlots(int32_t experts, int32_t k, const SlotsOwed& owed,
                                  std::span<const int32_t> ids, std::span<const float> gates,
                                  bool real, bool finiteGates, std::vector<uint8_t>& seen) {
  const int32_t n = owed.n;
  seen.assign(static_cast<size_t>(experts), 0);
  for (int32_t s = 0; s < k; ++s) {
    const int32_t id = ids[s];
    if (id == -1) {
      if (s < n && real) {
        return violation(ViolationKind::kSlotCount,
                         fmt::format("slot {} is empty (-1) but {} = {} slots must be filled{}", s,
                                     owed.name, n, owed.context));
      }
      if (s >= n && !(gates[s] == 0.0f)) {
        return violation(ViolationKind::kEmptySlot,
                         fmt::format("empty slot {} has gate {} ({}), not 0", s,
                                     decimal32(gates[s]), hex32(gates[s])));
      }
      continue;
    }
    if (id < 0 || id >= experts) {
      return violation(
          ViolationKind::kIdOutOfRange,
          fmt::format("slot {} holds id {}, outside [0, {}) (k = {})", s, id, experts, k));
    }
    if (s >= n) {
      return violation(ViolationKind::kEmptySlot,
                       fmt::format("slot {} holds id {} but only {} = {} slots exist{}", s, id,
                                   owed.name, n, owed.context));
    }
    if (seen[id]) {
      return violation(ViolationKind::kIdRepeated, fmt::format("expert {} appears twice", id));
    }
    seen[id] = 1;
    if (finiteGates && real && !(std::isfinite(gates[s]) && gates[s] >= 0.0f)) {
      return violation(ViolationKind::kGateNonfinite,
                       fmt::format("slot {} (expert {}) has gate {} ({}); the spec's gates are "
                                   "finite and >= 0 on this row",
                                   s, id, decimal32(gates[s]), hex32(gates[s])));
    }
  }
  return std::nullopt;
}

}  // namespace moe::fuzz
