#include "moe/fuzz/layer_kernel.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstring>

#include "moe/fuzz/isolated_router.hpp"
#include "moe/layer_abi.h"
#include "params_v2.hpp"

namespace moe::fuzz {

namespace {

// A bf16 case's values as the ABI takes them: the top 16 bits of each binary32 (the case
// holds only values bf16 represents, so this is exact).
std::vector<uint16_t> bf16Bits(std::span<const float> v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    out[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(v[i]) >> 16);
  }
  return out;
}

class FunctionLayer final : public LayerKernel {
 public:
  FunctionLayer(std::string name, Contract contract, LayerEntry entry, void* handle = nullptr)
      : LayerKernel(std::move(name), std::move(contract)), entry_(entry), handle_(handle) {}
  ~FunctionLayer() override {
    if (handle_) dlclose(handle_);
  }

 protected:
  int call(const moe_layer_params_v1& p, const void* x, const float* logits, const void* w13,
           const void* w2, float* y, int32_t* ids, float* gates, RouteFault&) const override {
    return entry_(&p, x, logits, w13, w2, y, ids, gates);
  }

 private:
  LayerEntry entry_;
  void* handle_;
};

Contract layerContractOf(std::string_view text) {
  Contract c;
  c.abi = std::string(kAbiLayerV1);
  if (text.empty()) return c;
  c = parseContract(text);
  if (!c.isLayer()) {
    throw std::invalid_argument(fmt::format("a moe_layer_v1 contract says \"abi\": \"{}\"", c.abi));
  }
  return c;
}

}  // namespace

LayerOutput LayerKernel::run(const LayerCase& c, bool withRouting) const {
  LayerOutput out;
  const float sentinel = std::bit_cast<float>(0x7fa00000u);
  out.y.assign(static_cast<size_t>(c.tokens) * c.hidden, sentinel);
  const size_t slots = static_cast<size_t>(c.tokens) * c.k;
  if (withRouting) {
    out.ids.assign(slots, -2);
    out.gates.assign(slots, sentinel);
  }
  moe_route_params_v2 route{};
  if (c.family) {
    route = paramsV2(*c.family, c.tokens, c.experts, c.k,
                     c.family->bias.empty() ? nullptr : c.family->bias.data());
  }
  moe_layer_params_v1 p{};
  p.struct_size = sizeof(moe_layer_params_v1);
  p.tokens = c.tokens;
  p.hidden = c.hidden;
  p.intermediate = c.intermediate;
  p.experts = c.experts;
  p.k = c.k;
  p.activation = MOE_ACT_SWIGLU;
  p.dtype = static_cast<int32_t>(c.dtype);
  p.route = c.family ? &route : nullptr;
  std::vector<uint16_t> x16, w13h, w2h;
  const void *x = c.x.data(), *w13 = c.w13.data(), *w2 = c.w2.data();
  if (c.dtype == LayerDtype::kBf16) {
    x16 = bf16Bits(c.x);
    w13h = bf16Bits(c.w13);
    w2h = bf16Bits(c.w2);
    x = x16.data(), w13 = w13h.data(), w2 = w2h.data();
  }
  RouteFault fault;
  const auto start = std::chrono::steady_clock::now();
  out.status =
      call(p, x, c.logits.data(), w13, w2, out.y.data(), withRouting ? out.ids.data() : nullptr,
           withRouting ? out.gates.data() : nullptr, fault);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.routed = withRouting;
  if (fault.kind != ViolationKind::kNone) {
    out.fault = std::move(fault);
    return out;
  }
  if (out.status < 0 || out.status > MOE_ROUTE_EBADPARAMS) {
    out.fault = RouteFault{ViolationKind::kBadStatus,
                           fmt::format("returned {}, a status layer_abi.h does not define (0 "
                                       "success, 1 to {} the MOE_ROUTE_E* codes)",
                                       out.status, MOE_ROUTE_EBADPARAMS),
                           fmt::format("status-{}", out.status)};
    return out;
  }
  if (out.status != 0) {
    out.abstained = true;
    out.abstainReason = fmt::format("returned {}", out.status);
  }
  return out;
}

LayerRerun LayerKernel::rerun(bool withRouting) const {
  return [this, withRouting](const LayerCase& c) -> std::optional<LayerOutput> {
    return run(c, withRouting);
  };
}

std::unique_ptr<LayerKernel> layerKernelFromFunction(std::string name, LayerEntry entry,
                                                     std::string_view contractJson) {
  return std::make_unique<FunctionLayer>(std::move(name), layerContractOf(contractJson), entry);
}

bool libraryExports(const std::string& path, const char* symbol) {
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) return false;
  const bool found = dlsym(handle, symbol) != nullptr;
  dlclose(handle);
  return found;
}

std::unique_ptr<LayerKernel> openLayerLibrary(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw RouterLoadError(fmt::format("cannot load layer library: {}", dlerror()));
  auto fail = [&](const std::string& why) {
    dlclose(handle);
    return RouterLoadError(fmt::format("layer library {}: {}", path, why));
  };
  auto entry = reinterpret_cast<LayerEntry>(dlsym(handle, "moe_layer_v1"));
  if (!entry) throw fail("exports no moe_layer_v1");
  using ContractFn = const char* (*)();
  Contract contract;
  contract.abi = std::string(kAbiLayerV1);
  if (auto fn = reinterpret_cast<ContractFn>(dlsym(handle, "moe_layer_v1_contract"))) {
    const char* text = fn();
    try {
      contract = layerContractOf(text ? text : "");
    } catch (const std::invalid_argument& e) {
      throw fail(e.what());
    }
  }
  return std::make_unique<FunctionLayer>(libraryRouterName(path, contract), contract, entry,
                                         handle);
}

}  // namespace moe::fuzz
