// The C ABI (v1 and v2) of one built-in router, compiled once per libmoe_route_<name>.so with
// MOE_ROUTER_NAME set; export_abi.map keeps every other symbol local.
#include "moe/route_abi.h"
#include "moe/routers.hpp"

#ifndef MOE_ROUTER_NAME
#error "MOE_ROUTER_NAME must name a built-in router"
#endif

namespace {

const moe::BuiltinRouter& thisRouter() {
  static const moe::BuiltinRouter* router = moe::findRouter(MOE_ROUTER_NAME);
  return *router;  // non-null: CMake only builds names from the registry
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int moe_route_v1(int32_t tokens, int32_t experts,
                                                                   int32_t k, const float* logits,
                                                                   int32_t* ids, float* gates) {
  // Threads: all cores, spread only over batches big enough to pay for them.
  return thisRouter().route(tokens, experts, k, logits, ids, gates, 0);
}

extern "C" __attribute__((visibility("default"))) const char* moe_route_v1_contract(void) {
  return thisRouter().contract_json.data();
}

extern "C" __attribute__((visibility("default"))) int moe_route_v2(const moe_route_params_v2* p,
                                                                   const float* logits,
                                                                   int32_t* ids, float* gates) {
  return thisRouter().route_v2(p, logits, ids, gates, 0);
}

extern "C" __attribute__((visibility("default"))) const char* moe_route_v2_contract(void) {
  return thisRouter().contract_v2_json.data();
}
