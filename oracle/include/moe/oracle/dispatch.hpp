#pragma once
// Dispatch (the `moe_align_block_size` of serving engines): each expert's kept slots listed
// in slot order, experts in increasing order, each list padded to a multiple of the block.
// Built on capacityKeeps (capacity.hpp): the capacity limit is capacityKeeps over the
// non-empty slots in slot order, so a slot's fate depends only on the slots before it.
// Transliterated from lean-traces/Spec.lean's dispatch section; its DispatchTest vectors
// are replayed here by tests/lean/replay_dispatch_test.cpp. Lean's ids are `Option Nat`
// (`none` an empty slot): here any negative id is empty, where the C ABI takes only -1.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "moe/oracle/capacity.hpp"
#include "moe/oracle/error.hpp"

namespace moe::oracle {

// A non-empty slot: its index t * k + j and the expert its id names.
struct DispatchSlot {
  std::size_t slot = 0, expert = 0;
  bool operator==(const DispatchSlot&) const = default;
};

// Lean: Spec.MoE.dispatchSlots — serves capacity_depends_on_devices
// The non-empty slots in slot order; ids[s] < 0 is an empty slot (Lean's `none`).
inline std::vector<DispatchSlot> dispatchSlots(std::span<const std::int64_t> ids) {
  std::vector<DispatchSlot> out;
  for (std::size_t s = 0; s < ids.size(); ++s) {
    if (ids[s] >= 0) out.push_back({s, static_cast<std::size_t>(ids[s])});
  }
  return out;
}

// Lean: Spec.MoE.dispatchKept — serves capacity_depends_on_devices (through capacityKeeps)
// The slots dispatch keeps: with a capacity C, those capacityKeeps C keeps over the experts
// of the non-empty slots in slot order; without one (nullopt), every non-empty slot.
inline std::vector<DispatchSlot> dispatchKept(std::optional<std::size_t> C,
                                              std::span<const std::int64_t> ids) {
  std::vector<DispatchSlot> slots = dispatchSlots(ids);
  if (!C) return slots;
  std::vector<std::size_t> group(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) group[i] = slots[i].expert;
  const std::vector<bool> keeps = capacityKeeps(*C, group);
  std::vector<DispatchSlot> kept;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (keeps[i]) kept.push_back(slots[i]);
  }
  return kept;
}

// Lean: Spec.MoE.padTo — serves padTo_mod_block
// The least multiple of `block` that is >= n (block >= 1).
inline std::size_t padTo(std::size_t block, std::size_t n) {
  return (n + block - 1) / block * block;
}

// Lean: Spec.MoE.expertSlots — serves padTo_mod_block (each list padded to whole blocks)
// Expert e's kept slots in slot order, for every e < E (one pass; Lean filters per expert,
// `expertSlots kept e`).
inline std::vector<std::vector<std::size_t>> expertSlots(std::size_t E,
                                                         std::span<const DispatchSlot> kept) {
  std::vector<std::vector<std::size_t>> out(E);
  for (const DispatchSlot& d : kept) {
    if (d.expert >= E) {
      throw SpecError("expertSlots: slot " + std::to_string(d.slot) + " names expert " +
                      std::to_string(d.expert) + " of " + std::to_string(E));
    }
    out[d.expert].push_back(d.slot);
  }
  return out;
}

// Lean: Spec.MoE.DispatchLayout
// The spec's dispatch: sortedSlots (rows entries) and blockExpert (rows / block entries).
struct DispatchLayout {
  std::vector<std::size_t> sortedSlots, blockExpert;
  std::size_t rows() const { return sortedSlots.size(); }
};

// Lean: Spec.MoE.dispatchSpec — serves padTo_mod_block and capacity_depends_on_devices
// Expert 0's kept slots, then padding (the value ids.size() = tokens * k) up to
// padTo block; then expert 1's; ... An expert with no kept slot takes no block.
inline DispatchLayout dispatchSpec(std::size_t E, std::size_t block, std::optional<std::size_t> C,
                                   std::span<const std::int64_t> ids) {
  if (block == 0) throw SpecError("dispatchSpec: block 0 (the domain is block >= 1)");
  const std::vector<std::vector<std::size_t>> lists = expertSlots(E, dispatchKept(C, ids));
  const std::size_t pad = ids.size();
  DispatchLayout out;
  for (std::size_t e = 0; e < E; ++e) {
    const std::size_t padded = padTo(block, lists[e].size());
    out.sortedSlots.insert(out.sortedSlots.end(), lists[e].begin(), lists[e].end());
    out.sortedSlots.insert(out.sortedSlots.end(), padded - lists[e].size(), pad);
    out.blockExpert.insert(out.blockExpert.end(), padded / block, e);
  }
  return out;
}

}  // namespace moe::oracle
