/* Dispatch kernels for the dispatch door's tests (dispatch_door_test.cpp): one correct C
 * kernel, and, by a define each, the bugs the verdict must name: BUG_LAST_BLOCK_UNPADDED
 * (the last expert's padding left unwritten), BUG_PAD_COUNTED (a list sized (n + block) /
 * block blocks: the padding counted as a slot), BUG_CAPACITY_LAST (capacity keeps an expert's
 * last slots), BUG_DUPLICATE (the first expert's first slot written again in place of its
 * first padding), BUG_EXPERT_ORDER (experts listed in decreasing order), BUG_DROP_LAST (the
 * last slot never listed), BUG_REVERSE_SLOTS (an expert's slots in decreasing order; with
 * ORDER_ANY its contract allows it), and hostile ones: BUG_SEGV (a NULL write when experts
 * >= 100), BUG_OOB (writes one entry past max_rows when
 * block % 4 is 3), BUG_HANG (spins when
 * experts is 7). */
#include <stdint.h>
#include <stdlib.h>

#include "moe/layer_abi.h"

#define EXPORT __attribute__((visibility("default")))

static int64_t padded(int64_t n, int64_t block) {
#ifdef BUG_PAD_COUNTED
  return n > 0 ? (n + block) / block * block : 0;
#else
  return (n + block - 1) / block * block;
#endif
}

EXPORT int moe_dispatch_v1(int32_t tokens, int32_t k, int32_t experts, int32_t block,
                           int32_t capacity, const int32_t* ids, int32_t* sorted_slots,
                           int32_t* block_expert, int32_t* rows, int32_t max_rows) {
  if (tokens < 0 || k < 0 || experts < 0) return MOE_ROUTE_EBADSIZE;
  const int64_t slots = (int64_t)tokens * k;
  if (slots > INT32_MAX) return MOE_ROUTE_EOVERFLOW;
  if (block < 1) return MOE_ROUTE_EBADPARAMS;
  if ((slots > 0 && !ids) || !rows || (max_rows > 0 && !sorted_slots) ||
      (max_rows / block > 0 && !block_expert)) {
    return MOE_ROUTE_ENULL;
  }
  for (int64_t s = 0; s < slots; ++s) {
    if (ids[s] < -1 || ids[s] >= experts) return MOE_ROUTE_EBADPARAMS;
  }
#ifdef BUG_HANG
  if (experts == 7) {
    for (volatile int spin = 1; spin;) {
    }
  }
#endif
  int64_t* count = calloc((size_t)experts + 1, sizeof *count);
  int64_t* start = calloc((size_t)experts + 1, sizeof *start);
  uint8_t* keep = calloc((size_t)slots + 1, 1);
  if (!count || !start || !keep) {
    free(count), free(start), free(keep);
    return MOE_ROUTE_EINTERNAL;
  }
  /* Which slots are kept: an expert's first `capacity` slots (BUG_CAPACITY_LAST: its last). */
  int64_t* total = calloc((size_t)experts + 1, sizeof *total);
  for (int64_t s = 0; s < slots; ++s) {
    if (ids[s] >= 0) ++total[ids[s]];
  }
  for (int64_t s = 0; s < slots; ++s) {
    const int32_t e = ids[s];
    if (e < 0) continue;
#ifdef BUG_DROP_LAST
    if (s == slots - 1) continue;
#endif
    int64_t seen = count[e]++;
#ifdef BUG_CAPACITY_LAST
    keep[s] = capacity < 0 || seen >= total[e] - capacity;
#else
    keep[s] = capacity < 0 || seen < capacity;
#endif
  }
  for (int32_t e = 0; e < experts; ++e) count[e] = 0;
  for (int64_t s = 0; s < slots; ++s) {
    if (keep[s]) ++count[ids[s]];
  }
  int64_t need = 0;
  for (int32_t e = 0; e < experts; ++e) need += padded(count[e], block);
  if (need > max_rows) {
    free(count), free(start), free(keep), free(total);
    return MOE_ROUTE_EOVERFLOW;
  }
#ifdef BUG_SEGV
  if (experts >= 100 && slots > 0) *(volatile int32_t*)0 = 1;
#endif
  int64_t at = 0;
#ifdef BUG_EXPERT_ORDER
  for (int32_t e = experts - 1; e >= 0; --e) {
#else
  for (int32_t e = 0; e < experts; ++e) {
#endif
    start[e] = at;
    int64_t p = at;
#ifdef BUG_REVERSE_SLOTS
    for (int64_t s = slots - 1; s >= 0; --s) {
#else
    for (int64_t s = 0; s < slots; ++s) {
#endif
      if (keep[s] && ids[s] == e) sorted_slots[p++] = (int32_t)s;
    }
    const int64_t end = at + padded(count[e], block);
#ifdef BUG_LAST_BLOCK_UNPADDED
    int last = 1;
    for (int32_t later = e + 1; later < experts; ++later) last = last && count[later] == 0;
    if (!last)
#endif
      for (; p < end; ++p) sorted_slots[p] = (int32_t)slots;
#ifdef BUG_DUPLICATE
    if (count[e] > 0 && count[e] < end - at) sorted_slots[at + count[e]] = sorted_slots[at];
#endif
    for (int64_t b = at / block; b < end / block; ++b) block_expert[b] = e;
    at = end;
  }
#ifdef BUG_OOB
  if (block % 4 == 3) sorted_slots[max_rows] = 0;
#endif
  *rows = (int32_t)at;
  free(count), free(start), free(keep), free(total);
  return MOE_ROUTE_OK;
}

EXPORT const char* moe_dispatch_v1_contract(void) {
#ifdef ORDER_ANY
  return "{\"abi\": \"moe_dispatch_v1\", \"within_expert_order\": \"any\"}";
#else
  return "{\"abi\": \"moe_dispatch_v1\"}";
#endif
}
