/* A correct router behind moe_route_v1 (TorchLean's softmax in binary32 with expf, top-k on
 * the probabilities, ties to the lower index, gates renormalised in index order), built
 * once per PEER_* variant below as a shared library. Each variant is one behaviour of a
 * kernel nobody here wrote that the real-kernels tests (issue 12) need:
 *   PEER_TIE_HIGH_ANY   ties to the higher index, and a contract that says "tie_order": "any"
 *   PEER_TWO_BUGS       ties to the higher index AND gates not renormalised (two kinds)
 *   PEER_SHAPE_256_8    supports only E = 256, k = 8 (MOE_ROUTE_EUNSUPPORTED otherwise)
 *   PEER_LARGE_BATCH    the last token of a batch of 4,096 or more reads the wrong row
 *   PEER_ABSTAIN_ALL    supports nothing (MOE_ROUTE_EUNSUPPORTED on every call) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
#define MOE_ROUTE_EBADSIZE 1
#define MOE_ROUTE_EUNSUPPORTED 4
#define MOE_ROUTE_EINTERNAL 5

#if defined(PEER_TIE_HIGH_ANY) || defined(PEER_TWO_BUGS)
#define TIES_TO_HIGHER 1
#else
#define TIES_TO_HIGHER 0
#endif

EXPORT const char* moe_route_v1_contract(void) {
  return "{\"abi\":\"moe_route_v1\",\"selects_on\":\"probabilities\",\"slot_order\":\"rank\","
         "\"batch_invariant\":false,\"compute\":\"binary32\",\"exp_max_ulp\":1"
#ifdef PEER_TIE_HIGH_ANY
         ",\"tie_order\":\"any\""
#endif
#ifdef PEER_SHAPE_256_8
         ",\"shapes\":{\"experts\":[256],\"k\":[8]}"
#endif
         "}";
}

/* Is expert a ahead of expert b? Larger probability first; exact ties by index. */
static int ahead(const float* p, int32_t a, int32_t b) {
  if (p[a] > p[b]) return 1;
  if (p[b] > p[a]) return 0;
  return TIES_TO_HIGHER ? a > b : a < b;
}

static void route_token(int32_t experts, int32_t k, const float* x, float* p, int32_t* ids,
                        float* gates) {
  const int32_t n = k < experts ? k : experts;
  float m = x[0], d = 0.0f, kept = 0.0f;
  for (int32_t i = 0; i < experts; ++i) m = m <= x[i] ? x[i] : m;
  for (int32_t i = 0; i < experts; ++i) {
    p[i] = expf(x[i] - m);
    d += p[i];
  }
  for (int32_t i = 0; i < experts; ++i) p[i] /= d;
  for (int32_t s = 0; s < k; ++s) {
    ids[s] = -1;
    gates[s] = 0.0f;
  }
  for (int32_t i = 0; i < experts; ++i) {
    int32_t s = n;
    while (s > 0 && (ids[s - 1] < 0 || ahead(p, i, ids[s - 1]))) --s;
    if (s == n) continue;
    for (int32_t t = n - 1; t > s; --t) ids[t] = ids[t - 1];
    ids[s] = i;
  }
  for (int32_t i = 0; i < experts; ++i) {
    for (int32_t s = 0; s < n; ++s) {
      if (ids[s] == i) kept += p[i];
    }
  }
  for (int32_t s = 0; s < n; ++s) {
#ifdef PEER_TWO_BUGS
    gates[s] = p[ids[s]];
#else
    gates[s] = p[ids[s]] / kept;
#endif
  }
}

EXPORT int moe_route_v1(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                        int32_t* ids, float* gates) {
  if (tokens < 0 || experts < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
#ifdef PEER_ABSTAIN_ALL
  return MOE_ROUTE_EUNSUPPORTED;
#endif
#ifdef PEER_SHAPE_256_8
  if (experts != 256 || k != 8) return MOE_ROUTE_EUNSUPPORTED;
#endif
  if (experts == 0) {
    for (int64_t s = 0; s < (int64_t)tokens * k; ++s) {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
    return 0;
  }
  float* p = malloc(sizeof(float) * (size_t)experts);
  if (!p) return MOE_ROUTE_EINTERNAL;
  for (int32_t t = 0; t < tokens; ++t) {
    int32_t row = t;
#ifdef PEER_LARGE_BATCH
    /* The last partial chunk of a long batch is addressed from the wrong base. */
    if (tokens >= 4096 && t == tokens - 1) row = t - 1;
#endif
    route_token(experts, k, logits + (int64_t)row * experts, p, ids + (int64_t)t * k,
                gates + (int64_t)t * k);
  }
  free(p);
  return 0;
}
