/* The one door every top-k router goes through (docs/design.md §4, The C ABI): ours, built
 * as libmoe_route_<name>.so, and any kernel a user brings.
 *
 * int moe_route_v1(tokens, experts, k, logits, ids, gates)
 *   logits  tokens*experts floats, row-major (token t's scores at logits[t*experts ...]).
 *   ids     tokens*k out: ids[t*k + s] is the s-th kept expert of token t, best first
 *           (rank order); -1 in slots s >= min(k, experts).
 *   gates   tokens*k out: the gate of ids[t*k + s]; 0 in empty slots.
 *   Returns 0 on success, or one of the MOE_ROUTE_E* codes below. On EBADSIZE, ENULL,
 *   EOVERFLOW and EUNSUPPORTED nothing has been written; after EINTERNAL the outputs are
 *   unspecified (but nothing outside them was written). Argument rules:
 *     - tokens, experts, k >= 0 (else MOE_ROUTE_EBADSIZE);
 *     - logits may be NULL only when tokens*experts == 0, ids and gates only when
 *       tokens*k == 0 (else MOE_ROUTE_ENULL);
 *     - tokens*experts*4 and tokens*k*4 bytes must not exceed 2^48, the most a 64-bit
 *       address space holds (else MOE_ROUTE_EOVERFLOW);
 *   experts == 0 with k > 0 is accepted: every slot is empty (-1, gate 0).
 *
 * const char *moe_route_v1_contract(void)
 *   A static, NUL-terminated JSON object saying what the router promises. Fields:
 *     "abi":             "moe_route_v1"
 *     "name":            the router's name, e.g. "avx512-logits"
 *     "selects_on":      "logits" (top-k on the logits, softmax over the kept ones) or
 *                        "probabilities" (Mixtral: softmax, top-k, renormalise)
 *     "slot_order":      "rank" (slots best first) or "any"
 *     "batch_invariant": true when a token's ids and gates depend only on its own row
 *                        (not on other tokens, its position, or the thread count)
 *     "compute":         "binary32"
 *     "exp_max_ulp":     the exp's maximum error in ulp against the correctly rounded
 *                        exp, measured over every argument the router can pass it
 *     "gate_budget":     {"spec32_factor": F, "ulp": N}: the router claims
 *                        |g - exact| <= F * |g_spec32 - exact| + N * ulp32(exact) for
 *                        each gate g of its own kept set, exact being the real-number gate
 *                        of that set and g_spec32 the binary32 evaluation of the spec
 *     "nonfinite_rows":  a sentence: what the router outputs for rows holding NaN, +inf
 *                        or only -inf logits (never an out-of-range or repeated id).
 *     "tie_order":       "lowest-index" (exactly equal scores go to the lower index, as the
 *                        spec says; the default) or "any" (no order among equal scores,
 *                        as torch.topk and std::sort-based kernels)
 *     "shapes":          {"experts": [...], "k": [...], "max_tokens": N}: the shapes the
 *                        kernel supports (numbers or ranges such as "1-64"); the fuzzer
 *                        draws only those. Elsewhere the kernel returns
 *                        MOE_ROUTE_EUNSUPPORTED, which is an abstention, never a finding.
 *   Any other key is an error: the fuzzer refuses the contract and names the nearest key.
 *
 * int moe_route_v2(const moe_route_params_v2 *p, logits, ids, gates)
 *   The routers of today's open MoE models (docs/design.md; the spec: the routing family of
 *   lean-traces/Spec.lean). Per token, with E = p->experts:
 *     1. scores s: softmax of the row (score = MOE_SCORE_SOFTMAX) or the sigmoid of each
 *        logit, 1 / (1 + exp(-x)) (MOE_SCORE_SIGMOID);
 *     2. selection keys c_e = s_e + bias[e] (c = s when bias is NULL);
 *     3. groups (groups > 1): group g is the experts [g*E/G, (g+1)*E/G); its score is the
 *        max of its keys (MOE_GROUP_MAX) or the sum of its two best keys, best first
 *        (MOE_GROUP_TOP2_SUM); the topk_groups best groups are kept (exact ties to the lower
 *        group index); experts of other groups are not eligible;
 *     4. the kept experts: the min(k, eligible) best eligible experts by key (exact ties to
 *        the lower index), in slots best first as v1;
 *     5. gates: the UNBIASED score s_e of each kept expert; if renormalize, divided by the
 *        sum of the kept scores taken in expert index order; then times scale.
 *   ids, gates, the slot order and the statuses EBADSIZE, ENULL, EOVERFLOW, EUNSUPPORTED and
 *   EINTERNAL are as v1's (with tokens, experts, k taken from *p); slots past
 *   min(k, eligible) are empty (-1, gate 0). Eligible experts number E when groups == 1,
 *   else topk_groups * E / groups. Further rules:
 *     - p == NULL: MOE_ROUTE_ENULL;
 *     - p->struct_size < sizeof(moe_route_params_v2), or any field below out of its domain:
 *       MOE_ROUTE_EBADPARAMS, and nothing is written. A larger struct_size is accepted (a
 *       caller built against a later version; the fields past this struct are ignored);
 *     - bias: NULL (no bias) or p->experts readable floats.
 *   Checked in this order: p NULL, struct_size, negative sizes (EBADSIZE), the family's
 *   fields (EBADPARAMS), NULL buffers (ENULL), sizes (EOVERFLOW), and only then what the
 *   kernel supports (EUNSUPPORTED): a kernel of one model's recipe still answers EBADPARAMS
 *   for parameters outside the domain, so that a caller can tell a bad call from a family
 *   the kernel lacks (the fuzzer reports another status there: bad-params-wrong-status).
 *
 * const char *moe_route_v2_contract(void)
 *   Optional, as for v1: the same fields, with "abi": "moe_route_v2" and
 *     "families": {"scores": [...], "groups": bool, "bias": bool}: the score functions
 *                        ("softmax", "sigmoid"), and whether groups > 1 and a bias are
 *                        supported; the fuzzer draws only those. A kernel of fixed values
 *                        lists them: "groups": [8], "topk_groups": [4], "group_score":
 *                        ["top2_sum"], "bias": "required", "renormalize": [true], "scale":
 *                        [2.5]; or names its model's recipe: {"recipes": ["deepseek-v3"]}.
 *   "selects_on" does not apply to v2 (the keys are step 2's).
 */
#ifndef MOE_ROUTE_ABI_H
#define MOE_ROUTE_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_ROUTE_OK 0
#define MOE_ROUTE_EBADSIZE 1     /* a negative tokens, experts or k (or threads) */
#define MOE_ROUTE_ENULL 2        /* a NULL pointer where data is needed */
#define MOE_ROUTE_EOVERFLOW 3    /* sizes whose byte counts overflow */
#define MOE_ROUTE_EUNSUPPORTED 4 /* this kernel does not support this CPU or this shape */
#define MOE_ROUTE_EINTERNAL 5    /* out of memory or a thread could not start */

int moe_route_v1(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                 float* gates);

const char* moe_route_v1_contract(void);

/* ---- version 2: the routing family (see the top of this file) ---- */

enum { MOE_SCORE_SOFTMAX = 0, MOE_SCORE_SIGMOID = 1 };
enum { MOE_GROUP_MAX = 0, MOE_GROUP_TOP2_SUM = 1 };

typedef struct moe_route_params_v2 {
  uint32_t struct_size;       /* sizeof(moe_route_params_v2): room to grow; smaller: EBADPARAMS */
  int32_t tokens, experts, k; /* as v1's arguments: >= 0 (else EBADSIZE) */
  int32_t score;              /* MOE_SCORE_*: MOE_SCORE_SOFTMAX or MOE_SCORE_SIGMOID */
  const float* bias;          /* experts entries, or NULL for none; added to the scores for
                                 selection only, never to the gates */
  int32_t groups;             /* n_group; 1 = no grouping; >= 1 and must divide experts (any
                                 groups >= 1 when experts == 0) */
  int32_t topk_groups;        /* groups kept: 1..groups */
  int32_t group_score;        /* MOE_GROUP_*; ignored when groups == 1; with
                                 MOE_GROUP_TOP2_SUM and groups > 1, experts / groups >= 2 */
  int32_t renormalize;        /* 0 or 1 */
  float scale;                /* routed scaling factor, finite (any sign); 1 = none */
} moe_route_params_v2;

#define MOE_ROUTE_EBADPARAMS 6 /* v2 parameters out of their domain; nothing written */

int moe_route_v2(const moe_route_params_v2* p, const float* logits, int32_t* ids,
                 float* gates); /* same outputs, statuses and slot order as v1 */

const char* moe_route_v2_contract(void); /* optional, as for v1 */

#ifdef __cplusplus
}
#endif

#endif /* MOE_ROUTE_ABI_H */
