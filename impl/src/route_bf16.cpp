// bf16 in, binary32 compute: widen exactly (bf16 is the top half of a binary32), then
// route with auto-probs on all cores.
#include "moe/route_bf16.h"

#include <cstring>
#include <exception>
#include <vector>

#include "moe/route_abi.h"
#include "moe/routers.hpp"

extern "C" int moe_route_v1_bf16(int32_t tokens, int32_t experts, int32_t k,
                                 const uint16_t* logits_bf16, int32_t* ids, float* gates) {
  const moe::BuiltinRouter* router = moe::findRouter("auto-probs");
  if (tokens < 0 || experts < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
  const int64_t count = int64_t{tokens} * experts;
  if (count > 0 && logits_bf16 == nullptr) return MOE_ROUTE_ENULL;
  try {
    // Nothing to widen: the router checks the remaining arguments itself.
    if (count == 0) return router->route(tokens, experts, k, nullptr, ids, gates, 0);
    if (static_cast<uint64_t>(count) > (uint64_t{1} << 48) / sizeof(float)) {
      return MOE_ROUTE_EOVERFLOW;  // as moe_route_v1: more than any address space holds
    }
    std::vector<float> widened(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t bits = static_cast<uint32_t>(logits_bf16[i]) << 16;
      std::memcpy(&widened[static_cast<size_t>(i)], &bits, sizeof(bits));
    }
    return router->route(tokens, experts, k, widened.data(), ids, gates, 0);
  } catch (const std::exception&) {  // std::bad_alloc for an absurd batch
    return MOE_ROUTE_EINTERNAL;
  }
}
