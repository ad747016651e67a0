// One deliberately broken router as a shared library: compiled once per bug with
// -DMOE_BROKEN_BUG=<Bug enumerator>, exporting the moe_route_v1 ABI (docs/design.md §4) so the
// acceptance tests drive it exactly as a user's kernel: `moe-oracle fuzz --impl lib.so`.
#include <cstdint>

#include "moe/fuzz/broken_routers.hpp"

extern "C" {

__attribute__((visibility("default"))) int moe_route_v1(int32_t tokens, int32_t experts, int32_t k,
                                                        const float* logits, int32_t* ids,
                                                        float* gates) {
  return moe::fuzz::routeWithBug(moe::fuzz::Bug::MOE_BROKEN_BUG, tokens, experts, k, logits, ids,
                                 gates);
}

__attribute__((visibility("default"))) const char* moe_route_v1_contract(void) {
  return moe::fuzz::brokenContractJSON(moe::fuzz::Bug::MOE_BROKEN_BUG).data();
}
}
