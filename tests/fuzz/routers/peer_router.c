/* A correct router behind moe_route_v1 (TorchLean's softmax in binary32 with expf, top-k on
 * the probabilities, ties to the lower index, gates renormalised in index order), built
 * once per PEER_* variant below as a shared library. Each variant is one behaviour of a
 * kernel nobody here wrote that the real-kernels tests need:
 *   PEER_TIE_HIGH_ANY   ties to the higher index, and a contract that says "tie_order": "any"
 *   PEER_TWO_BUGS       ties to the higher index AND gates not renormalised (two kinds)
 *   PEER_SHAPE_256_8    supports only E = 256, k = 8 (MOE_ROUTE_EUNSUPPORTED otherwise)
 *   PEER_LARGE_BATCH    the last token of a batch of 4,096 or more reads the wrong row
 *   PEER_ABSTAIN_ALL    supports nothing (MOE_ROUTE_EUNSUPPORTED on every call)
 * and the hostile kernels, each misbehaving on one shape only:
 *   PEER_SEGV_E13       dereferences NULL when E = 13
 *   PEER_TIE_GATES      a position-dependent exp, as ggml's: an odd expert's exp is one ulp
 *                       larger, so equal logits get gates one ulp apart and an odd index
 *                       wins the tie (a higher index against the even one before it)
 *   PEER_SLOW_E37       correct, but sleeps 2 s a call when E = 37: slow, not a hang
 *   PEER_QUADRATIC      correct, but spends O(E^2) a token (a pass over E per expert)
 *   PEER_SEGV_E13_ABORT_K3  both PEER_SEGV_E13 and PEER_ABORT_K3: two crashes on real shapes,
 *                       told apart by their signal
 *   PEER_EMPTY_ABORT_SEGV_E13  calls abort() on an empty batch (T = 0) and dereferences NULL
 *                       when E = 13: two faults of one kind, one only on a degenerate shape
 *   PEER_ABORT_K3       calls abort() when k = 3
 *   PEER_HANG_E7        never returns when E = 7
 *   PEER_OOB_IDS_E5     writes one element past the end of ids when E = 5
 *   PEER_OOB_GATES_E6   writes one element past the end of gates when E = 6
 *   PEER_STATUS_77_K2   returns 77, a status the ABI does not define, when k = 2
 *   PEER_BAD_CONTRACT   a contract with a typo ("slot-order") */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

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
#ifdef PEER_BAD_CONTRACT
         ",\"slot-order\":\"rank\""
#endif
         "}";
}

/* Is expert a ahead of expert b? Larger probability first; exact ties by index. qsort_r's
 * comparator, so that a token costs O(E log E) and the largest cases stay fast. */
static int behind(const void* a, const void* b, void* probs) {
  const float* p = probs;
  const int32_t i = *(const int32_t*)a, j = *(const int32_t*)b;
  if (p[i] > p[j]) return -1;
  if (p[j] > p[i]) return 1;
  return TIES_TO_HIGHER ? (i < j) - (i > j) : (i > j) - (i < j);
}

static void route_token(int32_t experts, int32_t k, const float* x, float* p, int32_t* order,
                        unsigned char* mark, int32_t* ids, float* gates) {
  const int32_t n = k < experts ? k : experts;
  float m = x[0], d = 0.0f, kept = 0.0f;
  for (int32_t i = 0; i < experts; ++i) m = m <= x[i] ? x[i] : m;
  for (int32_t i = 0; i < experts; ++i) {
    p[i] = expf(x[i] - m);
#ifdef PEER_TIE_GATES
    if (i & 1) p[i] = nextafterf(p[i], INFINITY);
#endif
    d += p[i];
  }
  for (int32_t i = 0; i < experts; ++i) {
    p[i] /= d;
    order[i] = i;
  }
  qsort_r(order, (size_t)experts, sizeof *order, behind, p);
  for (int32_t s = 0; s < k; ++s) {
    ids[s] = s < n ? order[s] : -1;
    gates[s] = 0.0f;
  }
  /* The kept probabilities summed in index order, as the spec sums them. */
  for (int32_t i = 0; i < experts; ++i) mark[i] = 0;
  for (int32_t s = 0; s < n; ++s) mark[ids[s]] = 1;
  for (int32_t i = 0; i < experts; ++i) {
    if (mark[i]) kept += p[i];
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
#ifdef PEER_EMPTY_ABORT_SEGV_E13
  if (tokens == 0) abort();
#endif
#if defined(PEER_SEGV_E13) || defined(PEER_EMPTY_ABORT_SEGV_E13) || defined(PEER_SEGV_E13_ABORT_K3)
  if (experts == 13) *(volatile int*)NULL = 1;
#endif
#if defined(PEER_ABORT_K3) || defined(PEER_SEGV_E13_ABORT_K3)
  if (k == 3) abort();
#endif
#ifdef PEER_HANG_E7
  if (experts == 7) {
    for (volatile int spin = 0;; spin = spin + 1) {
    }
  }
#endif
#ifdef PEER_SLOW_E37
  if (experts == 37) usleep(2000000);
#endif
#ifdef PEER_QUADRATIC
  {
    volatile float sink = 0.0f;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < experts; ++i) {
        for (int64_t j = 0; j < experts; ++j) sink = sink + logits[t * experts + j];
      }
    }
  }
#endif
#ifdef PEER_STATUS_77_K2
  if (k == 2) return 77;
#endif
  if (experts == 0) {
    for (int64_t s = 0; s < (int64_t)tokens * k; ++s) {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
    return 0;
  }
  float* p = malloc(sizeof(float) * (size_t)experts);
  int32_t* order = malloc(sizeof(int32_t) * (size_t)experts);
  unsigned char* mark = malloc((size_t)experts);
  if (!p || !order || !mark) {
    free(p);
    free(order);
    free(mark);
    return MOE_ROUTE_EINTERNAL;
  }
  for (int32_t t = 0; t < tokens; ++t) {
    int32_t row = t;
#ifdef PEER_LARGE_BATCH
    /* The last partial chunk of a long batch is addressed from the wrong base. */
    if (tokens >= 4096 && t == tokens - 1) row = t - 1;
#endif
    route_token(experts, k, logits + (int64_t)row * experts, p, order, mark, ids + (int64_t)t * k,
                gates + (int64_t)t * k);
  }
  free(p);
  free(order);
  free(mark);
#ifdef PEER_OOB_IDS_E5
  if (experts == 5 && tokens > 0 && k > 0) ids[(int64_t)tokens * k] = 0;
#endif
#ifdef PEER_OOB_GATES_E6
  if (experts == 6 && tokens > 0 && k > 0) gates[(int64_t)tokens * k] = 0.0f;
#endif
  return 0;
}
