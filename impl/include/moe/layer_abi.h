/* The doors after the router: a fused MoE layer and a dispatch kernel (docs/design.md, The C
 * ABI), judged by moe-oracle as routers are (route_abi.h holds the statuses and the routing
 * family's parameters).
 *
 * int moe_layer_v1(p, x, logits, w13, w2, y, ids, gates)
 *   One MoE layer over T = p->tokens tokens of hidden size H = p->hidden, with E = p->experts
 *   experts of intermediate size I = p->intermediate, each token routed to k = p->k of them:
 *     x       [T, H] in, binary32 or bf16 (p->dtype);
 *     logits  [T, E] in, binary32: the router's logits;
 *     w13     [E, 2I, H] in (p->dtype): expert e's W1 rows, then its W3 rows;
 *     w2      [E, H, I] in (p->dtype);
 *     y       [T, H] out, binary32: y_t = sum over the kept experts e of gate_e * f_e(x_t),
 *             with the SwiGLU expert f_e(x) = W2_e (silu(W1_e x) * (W3_e x));
 *     ids     [T, k] out when not NULL: the routing the layer used, as moe_route_v1's ids;
 *     gates   [T, k] out when not NULL: the gates it used.
 *   The routing is p->route's family (moe_route_v2's steps; its tokens/experts/k fields are
 *   ignored: p's are used), or softmax top-k renormalised over the kept experts when
 *   p->route is NULL. Accumulation is binary32 (bf16 inputs are widened exactly).
 *   Returns 0 or a MOE_ROUTE_E* status: EBADSIZE for a negative size; ENULL for a NULL p or a
 *   NULL buffer that holds data; EBADPARAMS for a struct_size smaller than this struct, an
 *   activation or dtype not listed below, or a route outside the family's domain; EOVERFLOW
 *   when a byte count exceeds 2^48; EUNSUPPORTED for a shape or family the kernel lacks;
 *   EINTERNAL on out of memory. Nothing is written on any error but EINTERNAL.
 *
 * int moe_dispatch_v1(tokens, k, experts, block, capacity, ids, sorted_slots, block_expert,
 *                     rows, max_rows)
 *   The `moe_align_block_size` step of serving engines. ids [tokens, k] in; slot t * k + j
 *   holds ids[t * k + j], -1 for an empty slot (skipped). Each expert's slots are listed
 *   contiguously in sorted_slots, experts in increasing order, each expert's list padded
 *   with the value tokens * k up to a multiple of `block` (an expert with no slot takes no
 *   block); block_expert[b] is the expert of block b; *rows is the padded length (a
 *   multiple of block). capacity < 0: no limit; else an expert keeps only its first
 *   `capacity` slots in slot order (the spec's capacityKeeps) and drops the others.
 *   Within an expert, slots are in increasing slot order unless the contract says
 *   "within_expert_order": "any".
 *   Returns 0 or: EBADSIZE for a negative tokens, k or experts; EBADPARAMS for block < 1 or
 *   an id neither -1 nor in 0..experts-1; ENULL for a NULL buffer that holds data; EOVERFLOW
 *   when tokens * k exceeds INT32_MAX or the padded length exceeds max_rows. Nothing is
 *   written on any error.
 *
 * const char *moe_layer_v1_contract(void), const char *moe_dispatch_v1_contract(void)
 *   Optional, as moe_route_v1_contract: a static JSON object, "abi" naming the door; the
 *   fields each door takes are listed in docs/fuzz.md (contracts).
 */
#ifndef MOE_LAYER_ABI_H
#define MOE_LAYER_ABI_H

#include <stdint.h>

#include "moe/route_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MOE_ACT_SWIGLU = 0 };                    /* W2 (silu(W1 x) * (W3 x)); others reserved */
enum { MOE_DTYPE_F32 = 0, MOE_DTYPE_BF16 = 1 }; /* of x and the weights */

typedef struct moe_layer_params_v1 {
  uint32_t struct_size; /* sizeof(moe_layer_params_v1); smaller: EBADPARAMS */
  int32_t tokens, hidden, intermediate, experts, k;
  int32_t activation, dtype;        /* MOE_ACT_*, MOE_DTYPE_* */
  const moe_route_params_v2* route; /* the routing family; NULL: softmax top-k renormalised */
} moe_layer_params_v1;

int moe_layer_v1(const moe_layer_params_v1* p, const void* x, const float* logits, const void* w13,
                 const void* w2, float* y, int32_t* ids, float* gates);

const char* moe_layer_v1_contract(void); /* optional */

int moe_dispatch_v1(int32_t tokens, int32_t k, int32_t experts, int32_t block, int32_t capacity,
                    const int32_t* ids, int32_t* sorted_slots, int32_t* block_expert, int32_t* rows,
                    int32_t max_rows);

const char* moe_dispatch_v1_contract(void); /* optional */

#ifdef __cplusplus
}
#endif

#endif /* MOE_LAYER_ABI_H */
