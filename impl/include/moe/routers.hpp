// The built-in routers, by name, for in-tree callers (fuzzer, tests, benchmarks).
// Each is also built as libmoe_route_<name>.so exporting the C ABI of route_abi.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "moe/route_abi.h"

namespace moe {

// Same contract as moe_route_v1, plus the thread count: 0 = all cores, negative is
// rejected with MOE_ROUTE_EBADSIZE. The result is bitwise independent of `threads`.
using RouteFn = int (*)(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                        int32_t* ids, float* gates, int32_t threads);

// Same contract as moe_route_v2, plus the thread count as RouteFn's.
using RouteV2Fn = int (*)(const moe_route_params_v2* p, const float* logits, int32_t* ids,
                          float* gates, int32_t threads);

struct BuiltinRouter {
  std::string_view name;  // "<isa>-<mode>": isa in scalar|avx2|avx512|auto, mode in probs|logits
  std::string_view contract_json;  // the text moe_route_v1_contract returns for it
  bool (*available)();             // false when this CPU lacks the ISA
  RouteFn route;                   // returns MOE_ROUTE_EUNSUPPORTED when !available()
  // moe_route_v2: the routing family, the same kernel for both modes of an ISA (v2 always
  // selects on the scores plus bias).
  std::string_view contract_v2_json;  // the text moe_route_v2_contract returns for it
  RouteV2Fn route_v2;                 // returns MOE_ROUTE_EUNSUPPORTED when !available()
};

// All eight built-in routers: scalar, avx2, avx512, auto, each in probs and logits mode.
std::span<const BuiltinRouter> builtinRouters();

// The router called `name`, or nullptr if there is none.
const BuiltinRouter* findRouter(std::string_view name);

}  // namespace moe
