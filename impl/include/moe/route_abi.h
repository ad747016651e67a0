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

#ifdef __cplusplus
}
#endif

#endif /* MOE_ROUTE_ABI_H */
