/* bf16 entry point: most production routers hold their logits in bfloat16.
 *
 * int moe_route_v1_bf16(tokens, experts, k, logits_bf16, ids, gates)
 *   Same arguments, rules, error codes and outputs as moe_route_v1 (route_abi.h), except
 *   that logits_bf16 holds bfloat16 bit patterns (the high 16 bits of a binary32). Each
 *   value is widened exactly to binary32 and routed by the "auto-probs" router (Mixtral
 *   semantics, the best instruction set this CPU has, all cores); the result is bitwise
 *   the result of moe_route_v1 of that router on the widened logits.
 *   Provided by the moe_impl library (not by the per-router shared libraries).
 */
#ifndef MOE_ROUTE_BF16_H
#define MOE_ROUTE_BF16_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int moe_route_v1_bf16(int32_t tokens, int32_t experts, int32_t k, const uint16_t* logits_bf16,
                      int32_t* ids, float* gates);

#ifdef __cplusplus
}
#endif

#endif /* MOE_ROUTE_BF16_H */
