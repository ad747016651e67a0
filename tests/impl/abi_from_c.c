/* Compiled as C: route_abi.h and route_bf16.h must stay plain C. route_shared_lib_test
 * passes each library's moe_route_v1 through here. */
#include "moe/route_abi.h"
#include "moe/route_bf16.h"

typedef int (*moe_route_v1_fn)(int32_t, int32_t, int32_t, const float*, int32_t*, float*);

int moe_test_route_from_c(moe_route_v1_fn route) {
  const float logits[3] = {0.5f, 2.0f, 1.0f};
  int32_t ids[2] = {-7, -7};
  float gates[2] = {0.0f, 0.0f};
  int rc = route(1, 3, 2, logits, ids, gates);
  if (rc != MOE_ROUTE_OK) return rc;
  return ids[0] == 1 && ids[1] == 2 && gates[0] > gates[1] ? 0 : -1;
}
