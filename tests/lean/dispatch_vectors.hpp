#pragma once
// A DispatchTest read once into the C ABI's types (moe_dispatch_v1's int32 arguments), for the
// replays against the oracle and against dispatch kernels.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lean_vectors.hpp"

namespace moe::lean {

struct DispatchVector {
  std::int32_t tokens = 0, k = 0, experts = 0, block = 0, capacity = 0;
  std::vector<std::int32_t> ids;          // -1: an empty slot
  std::vector<std::string> brokenRules;   // Lean's dispatchBrokenRules (empty when valid)
  std::vector<std::size_t> kept;          // valid only: dispatchKept's slots, in slot order
  std::vector<std::int32_t> sortedSlots;  // valid only
  std::vector<std::int32_t> blockExpert;  // valid only
  std::int32_t rows = 0;                  // valid only
};

inline DispatchVector dispatchVector(const json& t) {
  DispatchVector v;
  v.tokens = t.at("tokens").get<std::int32_t>();
  v.k = t.at("k").get<std::int32_t>();
  v.experts = t.at("experts").get<std::int32_t>();
  v.block = t.at("block").get<std::int32_t>();
  v.capacity = t.at("capacity").get<std::int32_t>();
  v.ids = t.at("ids").get<std::vector<std::int32_t>>();
  v.brokenRules = t.at("brokenRules").get<std::vector<std::string>>();
  if (t.contains("sorted_slots")) {
    v.kept = t.at("kept").get<std::vector<std::size_t>>();
    v.sortedSlots = t.at("sorted_slots").get<std::vector<std::int32_t>>();
    v.blockExpert = t.at("block_expert").get<std::vector<std::int32_t>>();
    v.rows = t.at("rows").get<std::int32_t>();
  }
  return v;
}

// The C ABI's capacity as the oracle takes it: below 0 no limit (Lean's none).
inline std::optional<std::size_t> oracleCapacity(std::int32_t capacity) {
  if (capacity < 0) return std::nullopt;
  return static_cast<std::size_t>(capacity);
}

inline std::vector<std::size_t> asSizes(const std::vector<std::int32_t>& xs) {
  std::vector<std::size_t> out;
  out.reserve(xs.size());
  for (std::int32_t x : xs) out.push_back(static_cast<std::size_t>(x));
  return out;
}

}  // namespace moe::lean
