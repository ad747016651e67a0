/* An example user router behind the moe_route_v2 C ABI (impl/include/moe/route_abi.h): the
 * routing family of DeepSeek-V3/R1, Kimi K2, GLM-4.5, Llama 4, Qwen2-MoE and DeepSeek-V2,
 * written the plain way, token by token: scores (softmax or sigmoid), selection keys (the
 * scores plus the bias), group scores and the kept groups, the k best eligible experts, and
 * gates from the unbiased scores, renormalised and scaled. Build it as a shared library and
 * fuzz it with
 *
 *   build/bin/moe-oracle fuzz --impl build/lib/libmy_family_router.so --seconds 60
 *
 * Outside this tree: cc -O2 -shared -fPIC -I<moe-oracle>/impl/include -o libmine.so mine.c -lm.
 * Replace the body with your kernel; keep the exported functions and the order of the
 * argument checks (the fuzzer draws invalid parameters too, and expects their status). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "moe/route_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* What this router promises; the fuzzer holds it to exactly this, and draws every family
 * listed under "families" (docs/fuzz.md). */
EXPORT const char* moe_route_v2_contract(void) {
  return "{\"abi\":\"moe_route_v2\",\"name\":\"my-family-router\","
         "\"families\":{\"scores\":[\"softmax\",\"sigmoid\"],\"groups\":true,\"bias\":true},"
         "\"slot_order\":\"rank\",\"batch_invariant\":true,\"compute\":\"binary32\","
         "\"exp_max_ulp\":1,"
         "\"nonfinite_rows\":\"a row with a NaN key or group score keeps the lowest-index "
         "experts of the lowest-index groups; gates NaN\"}";
}

/* The parameters' domain (the spec's paramsValid): groups divide the experts, 1 <= kept
 * groups <= groups, and a top-2 group score needs groups of two or more. */
static int params_valid(const moe_route_params_v2* p) {
  if (p->score != MOE_SCORE_SOFTMAX && p->score != MOE_SCORE_SIGMOID) return 0;
  if (p->renormalize != 0 && p->renormalize != 1) return 0;
  if (!isfinite(p->scale)) return 0;
  if (p->groups < 1 || p->experts % p->groups != 0) return 0;
  if (p->topk_groups < 1 || p->topk_groups > p->groups) return 0;
  if (p->groups > 1) {
    if (p->group_score != MOE_GROUP_MAX && p->group_score != MOE_GROUP_TOP2_SUM) return 0;
    if (p->group_score == MOE_GROUP_TOP2_SUM && p->experts / p->groups < 2) return 0;
  }
  return 1;
}

/* Is a ahead of b? The larger value first, exact ties to the lower index. */
static int ahead(const float* v, int32_t a, int32_t b) {
  if (v[a] > v[b]) return 1;
  if (v[b] > v[a]) return 0;
  return a < b;
}

/* Inserts i into best[0..n), kept in the order of `ahead` (-1: an empty place). */
static void insert(const float* v, int32_t i, int32_t* best, int32_t n) {
  int32_t s = n;
  while (s > 0 && (best[s - 1] < 0 || ahead(v, i, best[s - 1]))) --s;
  if (s == n) return;
  for (int32_t t = n - 1; t > s; --t) best[t] = best[t - 1];
  best[s] = i;
}

/* Scratch for one token: scores, keys, group scores, the kept groups (best first) and a
 * mark of the kept experts. */
struct scratch {
  float *s, *c, *group;
  int32_t* kept_groups;
  unsigned char* kept;
};

static void scores(const moe_route_params_v2* p, const float* x, float* s) {
  const int32_t E = p->experts;
  if (p->score == MOE_SCORE_SIGMOID) {
    for (int32_t e = 0; e < E; ++e) s[e] = 1.0f / (1.0f + expf(-x[e]));
    return;
  }
  /* softmax as the spec: the max, exp(x - max), the sum in index order, one division each */
  float m = x[0], d = 0.0f;
  for (int32_t e = 0; e < E; ++e) m = m <= x[e] ? x[e] : m;
  for (int32_t e = 0; e < E; ++e) {
    s[e] = expf(x[e] - m);
    d += s[e];
  }
  for (int32_t e = 0; e < E; ++e) s[e] /= d;
}

static void route_token(const moe_route_params_v2* p, const float* x, struct scratch* w,
                        int32_t* ids, float* gates) {
  const int32_t E = p->experts, k = p->k, G = p->groups, size = E / G;
  scores(p, x, w->s);
  for (int32_t e = 0; e < E; ++e) w->c[e] = p->bias ? w->s[e] + p->bias[e] : w->s[e];

  /* The kept groups: the topk_groups best group scores. */
  for (int32_t g = 0; g < G; ++g) {
    int32_t top[2] = {-1, -1};
    for (int32_t e = g * size; e < (g + 1) * size; ++e) insert(w->c, e, top, 2);
    const int top2 = G > 1 && p->group_score == MOE_GROUP_TOP2_SUM;
    w->group[g] = top2 ? w->c[top[0]] + w->c[top[1]] : w->c[top[0]];
  }
  for (int32_t r = 0; r < p->topk_groups; ++r) w->kept_groups[r] = -1;
  for (int32_t g = 0; g < G; ++g) insert(w->group, g, w->kept_groups, p->topk_groups);

  /* The kept experts: the k best keys of the kept groups, best first. */
  const int32_t eligible = p->topk_groups * size;
  const int32_t n = k < eligible ? k : eligible;
  for (int32_t s = 0; s < k; ++s) ids[s] = -1;
  for (int32_t r = 0; r < p->topk_groups; ++r) {
    const int32_t g = w->kept_groups[r];
    for (int32_t e = g * size; e < (g + 1) * size; ++e) insert(w->c, e, ids, n);
  }

  /* Gates: the unbiased scores, over their sum taken in expert index order, times scale. */
  float sum = 0.0f;
  if (p->renormalize) {
    for (int32_t e = 0; e < E; ++e) w->kept[e] = 0;
    for (int32_t s = 0; s < n; ++s) w->kept[ids[s]] = 1;
    for (int32_t e = 0; e < E; ++e) {
      if (w->kept[e]) sum += w->s[e];
    }
  }
  for (int32_t s = 0; s < k; ++s) {
    if (s < n) {
      const float g = p->renormalize ? w->s[ids[s]] / sum : w->s[ids[s]];
      gates[s] = g * p->scale;
    } else {
      gates[s] = 0.0f;
    }
  }
}

EXPORT int moe_route_v2(const moe_route_params_v2* p, const float* logits, int32_t* ids,
                        float* gates) {
  /* The ABI's order: p, struct_size, negative sizes, the family's fields, NULL buffers,
   * sizes. */
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_route_params_v2)) return MOE_ROUTE_EBADPARAMS;
  if (p->tokens < 0 || p->experts < 0 || p->k < 0) return MOE_ROUTE_EBADSIZE;
  if (!params_valid(p)) return MOE_ROUTE_EBADPARAMS;
  const int64_t T = p->tokens, E = p->experts, k = p->k;
  if ((T * E > 0 && !logits) || (T * k > 0 && (!ids || !gates))) return MOE_ROUTE_ENULL;
  if (T * E > (INT64_C(1) << 46) || T * k > (INT64_C(1) << 46)) return MOE_ROUTE_EOVERFLOW;
  if (T * k == 0) return MOE_ROUTE_OK;
  if (E == 0) { /* no experts: every slot is empty */
    for (int64_t s = 0; s < T * k; ++s) {
      ids[s] = -1;
      gates[s] = 0.0f;
    }
    return MOE_ROUTE_OK;
  }
  struct scratch w;
  w.s = malloc(sizeof(float) * (size_t)E * 2 + sizeof(float) * (size_t)p->groups);
  w.kept_groups = malloc(sizeof(int32_t) * (size_t)p->topk_groups);
  w.kept = malloc((size_t)E);
  if (!w.s || !w.kept_groups || !w.kept) {
    free(w.s);
    free(w.kept_groups);
    free(w.kept);
    return MOE_ROUTE_EINTERNAL;
  }
  w.c = w.s + E;
  w.group = w.c + E;
  for (int64_t t = 0; t < T; ++t) route_token(p, logits + t * E, &w, ids + t * k, gates + t * k);
  free(w.s);
  free(w.kept_groups);
  free(w.kept);
  return MOE_ROUTE_OK;
}
