// A peer fused layer nobody here wrote: Hugging Face's MixtralSparseMoeBlock, on PyTorch's
// C++ API (Debian 12's libtorch 1.13, CPU), behind the moe_layer_v1 C ABI
// (impl/include/moe/layer_abi.h). moe-oracle's layer door judges it like any other kernel:
//
//   probs = softmax(logits, dim=1, float32); w, ids = topk(probs, min(k, E)); w /= w.sum(-1)
//   for each expert e with tokens:  y[tokens] += w * (W2_e (silu(W1_e x) * (W3_e x)))
//
// which is the block's forward, line for line (the router's logits are given, not computed
// from x, as the ABI takes them). bf16 inputs are widened to float32 first, so every sum is
// binary32, as the contract says. torch.topk promises no order among exactly tied values,
// so the contract says "tie_order": "any" (examples/torch_router found the same).
//
// Build: examples/torch_layer/CMakeLists.txt, only when libtorch is found.
// Fuzz:  build/bin/moe-oracle fuzz --impl build/lib/libmoe_torch_layer.so --seconds 60
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>

#include "moe/layer_abi.h"

#define MOE_EXPORT __attribute__((visibility("default")))

// exp_max_ulp: Sleef's expf (softmax and SiLU's sigmoid), 1.0 ulp (examples/torch_router
// measured it).
extern "C" MOE_EXPORT const char* moe_layer_v1_contract(void) {
  return R"({"abi":"moe_layer_v1","name":"torch-mixtral-block","activation":"swiglu",)"
         R"("dtype":["f32","bf16"],"accumulate":"binary32","selects_on":"probabilities",)"
         R"("slot_order":"rank","compute":"binary32","exp_max_ulp":1.0,"tie_order":"any"})";
}

namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 48;

// The ABI's buffer as a float32 tensor (a bf16 one widened; an f32 one wrapped, not copied).
torch::Tensor input(const void* data, std::vector<int64_t> shape, int32_t dtype) {
  if (dtype == MOE_DTYPE_BF16) {
    return torch::from_blob(const_cast<void*>(data), shape, torch::kBFloat16).to(torch::kFloat32);
  }
  return torch::from_blob(const_cast<void*>(data), shape, torch::kFloat32);
}

}  // namespace

extern "C" MOE_EXPORT int moe_layer_v1(const moe_layer_params_v1* p, const void* xv,
                                       const float* logits, const void* w13v, const void* w2v,
                                       float* y, int32_t* ids, float* gates) {
  if (!p) return MOE_ROUTE_ENULL;
  if (p->struct_size < sizeof(moe_layer_params_v1)) return MOE_ROUTE_EBADPARAMS;
  const int64_t T = p->tokens, H = p->hidden, I = p->intermediate, E = p->experts, k = p->k;
  if (T < 0 || H < 0 || I < 0 || E < 0 || k < 0) return MOE_ROUTE_EBADSIZE;
  if (p->activation != MOE_ACT_SWIGLU ||
      (p->dtype != MOE_DTYPE_F32 && p->dtype != MOE_DTYPE_BF16)) {
    return MOE_ROUTE_EBADPARAMS;
  }
  if (p->route) return MOE_ROUTE_EUNSUPPORTED;  // Mixtral's routing only
  if ((T * H > 0 && (!xv || !y)) || (T * E > 0 && !logits) || (E * I * H > 0 && (!w13v || !w2v))) {
    return MOE_ROUTE_ENULL;
  }
  if (E * 3 * I * H * 4 > kMaxBytes || T * (H + E + 2 * k) * 4 > kMaxBytes) {
    return MOE_ROUTE_EOVERFLOW;
  }
  const int64_t n = std::min(k, E);
  try {
    if (at::get_num_threads() != 1) at::set_num_threads(1);
    c10::InferenceMode noAutograd;
    torch::Tensor out = torch::zeros({T, H}, torch::kFloat32);
    torch::Tensor g, top;
    if (T > 0 && n > 0) {
      const torch::Tensor x = input(xv, {T, H}, p->dtype);
      const torch::Tensor w13 = input(w13v, {E, 2 * I, H}, p->dtype);
      const torch::Tensor w2 = input(w2v, {E, H, I}, p->dtype);
      const torch::Tensor l = torch::from_blob(const_cast<float*>(logits), {T, E}, torch::kFloat32);
      const torch::Tensor probs = torch::softmax(l, /*dim=*/1, torch::kFloat32);
      std::tie(g, top) = torch::topk(probs, n, /*dim=*/1, /*largest=*/true, /*sorted=*/true);
      g = (g / g.sum(-1, /*keepdim=*/true)).contiguous();
      top = top.contiguous();
      // The block's loop: each expert over the tokens that keep it.
      const torch::Tensor mask = torch::one_hot(top, E).permute({2, 1, 0});  // [E, n, T]
      for (int64_t e = 0; e < E; ++e) {
        const auto where = torch::where(mask[e]);
        const torch::Tensor slot = where[0], token = where[1];
        if (token.numel() == 0) continue;
        const torch::Tensor cur = x.index_select(0, token);
        const torch::Tensor w1 = w13[e].narrow(0, 0, I), w3 = w13[e].narrow(0, I, I);
        const torch::Tensor h =
            torch::silu(torch::matmul(cur, w1.t())) * torch::matmul(cur, w3.t());
        const torch::Tensor ye = torch::matmul(h, w2[e].t()) * g.index({token, slot}).unsqueeze(1);
        out.index_add_(0, token, ye);
      }
    }
    if (T * H > 0) std::copy_n(out.data_ptr<float>(), T * H, y);
    if (ids && gates) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t s = 0; s < k; ++s) {
          const bool filled = s < n;
          ids[t * k + s] = filled ? static_cast<int32_t>(top[t][s].item<int64_t>()) : -1;
          gates[t * k + s] = filled ? g[t][s].item<float>() : 0.0f;
        }
      }
    }
    return MOE_ROUTE_OK;
  } catch (...) {  // c10::Error, std::bad_alloc: never across the C boundary
    return MOE_ROUTE_EINTERNAL;
  }
}
