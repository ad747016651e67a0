// moe_dispatch_v1 (layer_abi.h) over the layer's capacity dispatch: capacityKeeps picks the
// kept slots, a counting sort by expert lists them in slot order, each list padded with
// tokens * k to a multiple of the block. Built as libmoe_dispatch_eigen.so, the in-tree
// kernel behind the dispatch door; dispatch_abi.map exports only the ABI's symbols.
#include <climits>
#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "moe/capacity_dispatch.hpp"
#include "moe/layer_abi.h"

namespace {

// The statuses before anything is read or written: the sizes, then the buffers, then ids.
int checkCall(int32_t tokens, int32_t k, int32_t experts, int32_t block, const int32_t* ids,
              const int32_t* sorted, const int32_t* blockExpert, const int32_t* rows,
              int32_t maxRows) {
  if (tokens < 0 || k < 0 || experts < 0) return MOE_ROUTE_EBADSIZE;
  const int64_t slots = int64_t{tokens} * int64_t{k};
  if (slots > INT32_MAX) return MOE_ROUTE_EOVERFLOW;
  if (block < 1) return MOE_ROUTE_EBADPARAMS;
  if ((slots > 0 && !ids) || !rows || (maxRows > 0 && !sorted) ||
      (maxRows / block > 0 && !blockExpert)) {
    return MOE_ROUTE_ENULL;
  }
  for (int64_t s = 0; s < slots; ++s) {
    if (ids[s] < -1 || ids[s] >= experts) return MOE_ROUTE_EBADPARAMS;
  }
  return MOE_ROUTE_OK;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int moe_dispatch_v1(
    int32_t tokens, int32_t k, int32_t experts, int32_t block, int32_t capacity, const int32_t* ids,
    int32_t* sorted_slots, int32_t* block_expert, int32_t* rows, int32_t max_rows) {
  const int status =
      checkCall(tokens, k, experts, block, ids, sorted_slots, block_expert, rows, max_rows);
  if (status != MOE_ROUTE_OK) return status;
  try {
    const int64_t slots = int64_t{tokens} * int64_t{k};
    const std::span<const int32_t> slotIds(ids, static_cast<size_t>(slots));
    const std::vector<uint8_t> keep =
        moe::capacityKeeps(capacity < 0 ? INT64_MAX : capacity, slotIds, k, experts);
    std::vector<int64_t> start(static_cast<size_t>(experts) + 1, 0);
    for (int64_t s = 0; s < slots; ++s) {
      if (keep[s]) ++start[static_cast<size_t>(ids[s]) + 1];
    }
    std::vector<int64_t> count(start.begin() + 1, start.end());
    int64_t padded = 0;
    for (int32_t e = 0; e < experts; ++e) {
      start[e] = padded;
      padded += (count[e] + block - 1) / block * block;
    }
    if (padded > max_rows) return MOE_ROUTE_EOVERFLOW;
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t s = 0; s < slots; ++s) {
      if (keep[s]) sorted_slots[next[static_cast<size_t>(ids[s])]++] = static_cast<int32_t>(s);
    }
    for (int32_t e = 0; e < experts; ++e) {
      const int64_t end = start[e] + (count[e] + block - 1) / block * block;
      for (int64_t p = next[e]; p < end; ++p) sorted_slots[p] = static_cast<int32_t>(slots);
      for (int64_t b = start[e] / block; b < end / block; ++b) block_expert[b] = e;
    }
    *rows = static_cast<int32_t>(padded);
    return MOE_ROUTE_OK;
  } catch (const std::exception&) {
    return MOE_ROUTE_EINTERNAL;  // out of memory: nothing was written
  }
}

extern "C" __attribute__((visibility("default"))) const char* moe_dispatch_v1_contract(void) {
  return R"({"abi": "moe_dispatch_v1", "name": "dispatch-eigen", "within_expert_order": "slot"})";
}
