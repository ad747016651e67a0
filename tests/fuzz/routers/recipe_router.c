/* A fixed-recipe kernel, as most production fused routing kernels are: the plain family
 * router of examples/my_family_router.c, taking only one model's recipe and refusing every
 * other family with MOE_ROUTE_EUNSUPPORTED (after the parameter checks, which route_abi.h
 * puts first). Built once per RECIPE_* below; its contract names the recipe in one word.
 *   RECIPE_DEEPSEEK_V3  E = 256, k = 8, sigmoid, a bias, 8 groups by top-2 sum, top 4,
 *                       renormalised, scale 2.5
 *   RECIPE_LLAMA4       E = 16 or 128, k = 1, sigmoid, no bias, no groups, raw, scale 1
 * With UNSUPPORTED_FIRST, the kernel answers MOE_ROUTE_EUNSUPPORTED before it checks the
 * parameters' domain, against route_abi.h's order: bad-params-wrong-status. */
#define moe_route_v2 family_route_v2
#define moe_route_v2_contract family_route_v2_contract
#include "my_family_router.c"
#undef moe_route_v2
#undef moe_route_v2_contract

#if defined(RECIPE_DEEPSEEK_V3)
#define RECIPE_NAME "deepseek-v3"
static int is_recipe(const moe_route_params_v2* p) {
  return p->experts == 256 && p->k == 8 && p->score == MOE_SCORE_SIGMOID && p->bias != NULL &&
         p->groups == 8 && p->topk_groups == 4 && p->group_score == MOE_GROUP_TOP2_SUM &&
         p->renormalize == 1 && p->scale == 2.5f;
}
#elif defined(RECIPE_LLAMA4)
#define RECIPE_NAME "llama4"
static int is_recipe(const moe_route_params_v2* p) {
  return (p->experts == 16 || p->experts == 128) && p->k == 1 && p->score == MOE_SCORE_SIGMOID &&
         p->bias == NULL && p->groups == 1 && p->renormalize == 0 && p->scale == 1.0f;
}
#else
#error "define RECIPE_DEEPSEEK_V3 or RECIPE_LLAMA4"
#endif

EXPORT const char* moe_route_v2_contract(void) {
  return "{\"abi\":\"moe_route_v2\",\"name\":\"recipe-" RECIPE_NAME
         "\","
         "\"families\":{\"recipes\":[\"" RECIPE_NAME
         "\"]},"
         "\"slot_order\":\"rank\",\"compute\":\"binary32\",\"exp_max_ulp\":1}";
}

EXPORT int moe_route_v2(const moe_route_params_v2* p, const float* logits, int32_t* ids,
                        float* gates) {
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_route_params_v2)) return MOE_ROUTE_EBADPARAMS;
  if (p->tokens < 0 || p->experts < 0 || p->k < 0) return MOE_ROUTE_EBADSIZE;
#ifdef UNSUPPORTED_FIRST
  if (!is_recipe(p)) return MOE_ROUTE_EUNSUPPORTED;
#endif
  if (!params_valid(p)) return MOE_ROUTE_EBADPARAMS;
  if (!is_recipe(p)) return MOE_ROUTE_EUNSUPPORTED;
  return family_route_v2(p, logits, ids, gates);
}
