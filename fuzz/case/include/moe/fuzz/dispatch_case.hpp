// A dispatch case (moe_dispatch_v1's arguments; layer_abi.h) and its generator: the ids of
// tokens * k slots (-1 an empty slot), the block, the capacity, max_rows, and which buffers
// go as NULL. Cases outside the domain are drawn on purpose: the statuses are judged too.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "moe/fuzz/dispatch_contract.hpp"

namespace moe::fuzz {

struct DispatchCase {
  int32_t tokens = 0, k = 0, experts = 0, block = 1, capacity = -1, maxRows = 0;
  // tokens * k entries, or fewer when tokens * k is negative or past int32 (then ids goes
  // as NULL: no buffer of that size is made).
  std::vector<int32_t> ids;
  bool nullIds = false, nullSortedSlots = false, nullBlockExpert = false, nullRows = false;

  // tokens * k in 64 bits (negative for a negative size).
  int64_t slots() const { return int64_t{tokens} * int64_t{k}; }
  // Entries of the buffers the kernel gets: sorted_slots max_rows, block_expert
  // max_rows / block (the most blocks max_rows rows hold); 0 for a negative max_rows.
  size_t sortedEntries() const { return maxRows > 0 ? static_cast<size_t>(maxRows) : 0; }
  size_t blockExpertEntries() const {
    return maxRows > 0 ? static_cast<size_t>(maxRows / (block > 0 ? block : 1)) : 0;
  }
};

nlohmann::json dispatchCaseJSON(const DispatchCase& c);
// Throws std::invalid_argument naming the field that is missing or malformed.
DispatchCase dispatchCaseFromJSON(const nlohmann::json& j);
// "T 64, k 8, E 16, block 4, capacity 12, max_rows 200" for reports.
std::string dispatchShapeText(const DispatchCase& c);

// What a run draws. The contract's shapes, then --tokens/--k/--experts/--block/--capacity
// (values and ranges; empty: not given). `huge` lets cases of 2^16 and 2^24 slots be drawn
// (the campaign turns it off when such a case would end past the time limit). `domainOnly`
// draws no case outside the domain (the Python door: a function has no statuses).
struct DispatchDraw {
  DispatchShapes shapes;
  bool huge = true;
  bool domainOnly = false;
};

// Throws std::invalid_argument on a malformed list or one outside its range.
DispatchShapes dispatchShapesFor(const DispatchShapes& contract, const std::string& tokens,
                                 const std::string& k, const std::string& experts,
                                 const std::string& block, const std::string& capacity);

DispatchCase drawDispatchCase(std::mt19937_64& rng, const DispatchDraw& draw);

// The padded length the ids give (capacity applied), as the generator needs it to draw
// max_rows at and around it; -1 when the case is outside the domain.
int64_t dispatchRowsNeeded(const DispatchCase& c);

}  // namespace moe::fuzz
