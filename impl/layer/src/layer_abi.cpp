// moe_layer_v1 (layer_abi.h) over moe::Layer: the routing by the scalar router (softmax
// top-k renormalised, or the routing family through its moe_route_v2), then the layer's
// sparse forward (tokens grouped by expert, each group through the SwiGLU expert, combined
// in expert index order). Built as libmoe_layer_eigen.so, the in-tree layer behind the layer
// door; layer_abi.map exports only the ABI's symbols.
#include "moe/layer_abi.h"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "moe/layer.hpp"
#include "moe/routers.hpp"

namespace {

// The statuses before anything is read or written, in layer_abi.h's order.
int checkCall(const moe_layer_params_v1* p, const void* x, const float* logits, const void* w13,
              const void* w2, const float* y) {
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_layer_params_v1)) return MOE_ROUTE_EBADPARAMS;
  if (p->tokens < 0 || p->hidden < 0 || p->intermediate < 0 || p->experts < 0 || p->k < 0) {
    return MOE_ROUTE_EBADSIZE;
  }
  if (p->activation != MOE_ACT_SWIGLU ||
      (p->dtype != MOE_DTYPE_F32 && p->dtype != MOE_DTYPE_BF16)) {
    return MOE_ROUTE_EBADPARAMS;
  }
  const int64_t T = p->tokens, H = p->hidden, I = p->intermediate, E = p->experts;
  if ((T * H > 0 && (!x || !y)) || (T * E > 0 && !logits) || (E * I * H > 0 && (!w13 || !w2))) {
    return MOE_ROUTE_ENULL;
  }
  if (E * 3 * I * H * 4 > (int64_t{1} << 48) || T * (H + E) * 4 > (int64_t{1} << 48)) {
    return MOE_ROUTE_EOVERFLOW;
  }
  return MOE_ROUTE_OK;
}

// The input as binary32 (bf16: the top 16 bits, exact).
const float* widen(const void* v, int64_t n, int32_t dtype, std::vector<float>& store) {
  if (dtype == MOE_DTYPE_F32) return static_cast<const float*>(v);
  store.resize(static_cast<size_t>(n));
  const auto* h = static_cast<const uint16_t*>(v);
  for (int64_t i = 0; i < n; ++i)
    store[static_cast<size_t>(i)] = std::bit_cast<float>(uint32_t{h[i]} << 16);
  return store.data();
}

const moe::BuiltinRouter& router() {
  static const moe::BuiltinRouter* r = moe::findRouter("scalar-probs");
  return *r;
}

// Slots the routing left empty (-1; a family with fewer eligible experts than k) where the
// layer requires an expert: another expert of the token, run with keep = 0 (no output).
void fillEmptySlots(moe::Routing& r, int64_t experts, std::vector<uint8_t>& keep) {
  keep.assign(r.ids.size(), 1);
  const int64_t filled = std::min(r.k, experts);
  for (int64_t t = 0; t < r.tokens; ++t) {
    int32_t* ids = r.ids.data() + t * r.k;
    for (int64_t s = 0; s < filled; ++s) {
      if (ids[s] >= 0) continue;
      int32_t e = 0;
      while (std::find(ids, ids + r.k, e) != ids + r.k) ++e;
      ids[s] = e;
      r.gates[static_cast<size_t>(t * r.k + s)] = 0.0f;
      keep[static_cast<size_t>(t * r.k + s)] = 0;
    }
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int moe_layer_v1(
    const moe_layer_params_v1* p, const void* xv, const float* logits, const void* w13v,
    const void* w2v, float* y, int32_t* idsOut, float* gatesOut) {
  const int status = checkCall(p, xv, logits, w13v, w2v, y);
  if (status != MOE_ROUTE_OK) return status;
  try {
    const int64_t T = p->tokens, H = p->hidden, I = p->intermediate, E = p->experts, k = p->k;
    moe::Routing routing;
    routing.tokens = T;
    routing.k = k;
    routing.ids.assign(static_cast<size_t>(T * k), -1);
    routing.gates.assign(static_cast<size_t>(T * k), 0.0f);
    int routed = MOE_ROUTE_OK;
    if (p->route) {
      moe_route_params_v2 route = *p->route;
      route.tokens = p->tokens;
      route.experts = p->experts;
      route.k = p->k;
      routed = router().route_v2(&route, logits, routing.ids.data(), routing.gates.data(), 1);
    } else {
      routed = router().route(p->tokens, p->experts, p->k, logits, routing.ids.data(),
                              routing.gates.data(), 1);
    }
    if (routed != MOE_ROUTE_OK) return routed;
    std::vector<float> xs, w13s, w2s;
    const float* x = widen(xv, T * H, p->dtype, xs);
    const float* w13 = widen(w13v, E * 2 * I * H, p->dtype, w13s);
    const float* w2 = widen(w2v, E * H * I, p->dtype, w2s);
    // The experts as the layer stores them: w1, w3 H x I (columns the ABI's rows), w2 I x H.
    std::vector<moe::SwiGluExpert> experts(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) {
      using ConstRows = Eigen::Map<const moe::RowMatrix>;
      moe::SwiGluExpert& ex = experts[static_cast<size_t>(e)];
      ex.w1 = ConstRows(w13 + e * 2 * I * H, I, H).transpose();
      ex.w3 = ConstRows(w13 + (e * 2 * I + I) * H, I, H).transpose();
      ex.w2 = ConstRows(w2 + e * H * I, H, I).transpose();
    }
    const moe::Layer layer(moe::RowMatrix::Zero(H, E), std::move(experts), k, router().route,
                           "scalar-probs");
    const std::vector<int32_t> ids = routing.ids;
    const std::vector<float> gates = routing.gates;
    std::vector<uint8_t> keep;
    fillEmptySlots(routing, E, keep);
    const moe::RowMatrix out =
        layer.forwardSparse(Eigen::Map<const moe::RowMatrix>(x, T, H), routing, keep);
    if (T * H > 0) std::memcpy(y, out.data(), static_cast<size_t>(T * H) * sizeof(float));
    if (idsOut && !ids.empty()) std::memcpy(idsOut, ids.data(), ids.size() * sizeof(int32_t));
    if (gatesOut && !gates.empty())
      std::memcpy(gatesOut, gates.data(), gates.size() * sizeof(float));
    return MOE_ROUTE_OK;
  } catch (const std::exception&) {
    return MOE_ROUTE_EINTERNAL;  // out of memory
  }
}

// The routing's promises are the scalar router's (the binary32 spec's evaluation: gates
// exact to it, the host expf within 0.502 ulp); the layer's are layer_abi.h's defaults.
extern "C" __attribute__((visibility("default"))) const char* moe_layer_v1_contract(void) {
  return R"({"abi": "moe_layer_v1", "name": "layer-eigen", "activation": "swiglu",
"dtype": ["f32", "bf16"], "accumulate": "binary32",
"families": {"scores": ["softmax", "sigmoid"], "groups": true, "bias": true},
"selects_on": "probabilities", "slot_order": "rank", "batch_invariant": true,
"compute": "binary32", "exp_max_ulp": 0.502, "gate_budget": {"spec32_factor": 2, "ulp": 0}})";
}
