/* An example user router behind the moe_route_v1 C ABI (docs/design.md §4): top-k on the
 * softmax probabilities, computed the way TorchLean's softmaxVecSpec does (max, expf of
 * x - max, sum in index order, one division each), ties to the lower index, gates
 * renormalised over the kept experts. Build it as a shared library and fuzz it with
 *
 *   build/bin/moe-oracle fuzz --impl build/lib/libmy_router.so --seconds 60
 *
 * Replace the body with your kernel; keep the two exported functions. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

/* What this router promises; the fuzzer holds it to exactly this (docs/fuzz.md). */
EXPORT const char* moe_route_v1_contract(void) {
  return "{\"abi\":\"moe_route_v1\",\"name\":\"my-router\",\"selects_on\":\"probabilities\","
         "\"slot_order\":\"rank\",\"batch_invariant\":true,\"compute\":\"binary32\","
         "\"exp_max_ulp\":1,\"gate_budget\":{\"spec32_factor\":2,\"ulp\":4},"
         "\"nonfinite_rows\":\"ids of the first experts, NaN gates\"}";
}

/* Is expert a ahead of expert b? Larger probability first, ties to the lower index. */
static int ahead(const float* p, int32_t a, int32_t b) {
  if (p[a] > p[b]) return 1;
  if (p[b] > p[a]) return 0;
  return a < b;
}

static void route_token(int32_t experts, int32_t k, const float* x, float* p, int32_t* ids,
                        float* gates) {
  float m = x[0], d = 0.0f, kept = 0.0f;
  int32_t n = k < experts ? k : experts;
  for (int32_t i = 0; i < experts; ++i) m = m <= x[i] ? x[i] : m;
  for (int32_t i = 0; i < experts; ++i) {
    p[i] = expf(x[i] - m);
    d += p[i];
  }
  for (int32_t i = 0; i < experts; ++i) p[i] /= d;
  /* Selection by insertion into the first n slots: O(E k), fine for an example. */
  for (int32_t s = 0; s < n; ++s) ids[s] = -1;
  for (int32_t i = 0; i < experts; ++i) {
    int32_t s = n;
    while (s > 0 && (ids[s - 1] < 0 || ahead(p, i, ids[s - 1]))) --s;
    if (s == n) continue;
    for (int32_t t = n - 1; t > s; --t) ids[t] = ids[t - 1];
    ids[s] = i;
  }
  /* Renormalise in expert index order, as the spec sums the kept probabilities. */
  for (int32_t i = 0; i < experts; ++i) {
    for (int32_t s = 0; s < n; ++s) {
      if (ids[s] == i) kept += p[i];
    }
  }
  for (int32_t s = 0; s < k; ++s) {
    if (s < n) {
      gates[s] = p[ids[s]] / kept;
    } else {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
  }
}

EXPORT int moe_route_v1(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                        int32_t* ids, float* gates) {
  if (tokens < 0 || experts < 1 || k < 0) return 1;
  if (tokens == 0) return 0;
  if (!logits || (k > 0 && (!ids || !gates))) return 1; /* k = 0: no slots to write */
  float* p = malloc(sizeof(float) * (size_t)experts);
  if (!p) return 3;
  for (int32_t t = 0; t < tokens; ++t) {
    route_token(experts, k, logits + (int64_t)t * experts, p, ids + (int64_t)t * k,
                gates + (int64_t)t * k);
  }
  free(p);
  return 0;
}
