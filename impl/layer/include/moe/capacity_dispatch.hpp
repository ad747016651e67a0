// Switch-style capacity dispatch and the Switch balancing loss, per work unit.
//
// A work unit is a fixed set of consecutive tokens chosen by the caller. Both the keep mask
// and the loss are functions of the unit alone: splitting a batch at unit boundaries, or
// running the units on different devices, gives the same answers (the seed's
// capacity_depends_on_devices and balance_depends_on_devices show what goes wrong when
// the "unit" is whatever a device happens to hold).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace moe {

/// Expert capacity for a unit of `tokens` tokens each sending `k` slots to `experts`
/// experts: ceil(capacity_factor * tokens * k / experts). With factor 1 it is computed in
/// integers, so k = 1 gives Lean's switchCapacity E n = ceil(n / E) exactly; otherwise the
/// product is evaluated in double before the ceiling. experts = 0 gives 0 (Lean's n / 0).
/// Throws std::invalid_argument for negative sizes or a factor that is negative or not finite.
std::int64_t switchCapacity(std::int64_t experts, std::int64_t tokens, std::int64_t k = 1,
                            double capacityFactor = 1.0);

/// Keep mask of one unit (Lean's capacityKeeps, generalised to k slots per token):
/// `ids` holds tokens*k expert ids, token-major (slot s of token t at t*k + s), -1 for an
/// empty slot. Slot (t, s) is kept when fewer than `capacity` earlier slots of the unit
/// (earlier tokens, then earlier slots of the same token) went to the same expert; empty
/// slots are never kept. For k = 1 this is capacityKeeps C group with group = ids.
/// Throws std::invalid_argument for an id outside [-1, experts) or mismatched sizes.
std::vector<std::uint8_t> capacityKeeps(std::int64_t capacity, std::span<const std::int32_t> ids,
                                        std::int64_t k, std::int64_t experts);

/// Switch's balancing loss on one unit (Lean's switchBalance): E * sum_e f_e * P_e, where
/// f_e is the fraction of the unit's tokens whose top-1 expert (slot 0 of `ids`) is e and
/// P_e the mean of column e of `probabilities` (tokens x experts, row-major) over the
/// unit. Computed in double. An empty unit has loss 0 (Lean's x / 0 = 0); a token whose
/// slot 0 is empty (k = 0) counts in n but routes to no expert.
double switchBalance(std::span<const std::int32_t> ids, std::int64_t k,
                     std::span<const float> probabilities, std::int64_t experts);

}  // namespace moe
