#include "moe/fuzz/layer_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>

#include "moe/fuzz/library_router.hpp"
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
  FunctionLayer(std::string name, Contract contract, LayerEntry entry)
      : LayerKernel(std::move(name), std::move(contract)), entry_(entry) {}

 protected:
  int call(const LayerCase&, const moe_layer_params_v1& p, const void* x, const float* logits,
           const void* w13, const void* w2, float* y, int32_t* ids, float* gates, double,
           RouteFault&, bool&, bool&) const override {
    return entry_(&p, x, logits, w13, w2, y, ids, gates);
  }

 private:
  LayerEntry entry_;
};

// A LayerFn (the Python door): it sees the case, not the ABI's buffers.
class CaseFunctionLayer final : public LayerKernel {
 public:
  CaseFunctionLayer(std::string name, Contract contract, LayerFn fn)
      : LayerKernel(std::move(name), std::move(contract)), fn_(std::move(fn)) {}

 protected:
  int call(const LayerCase& c, const moe_layer_params_v1&, const void*, const float*, const void*,
           const void*, float* y, int32_t* ids, float* gates, double, RouteFault& fault,
           bool& stopped, bool& routed) const override {
    LayerFnAnswer a = fn_(c, y, ids, gates);
    if (a.fault) fault = std::move(*a.fault);
    stopped = a.stopped;
    routed = a.routed;
    return a.status;
  }

 private:
  LayerFn fn_;
};

// In the door's child: the integers are tokens, hidden, intermediate, experts, k,
// activation, dtype, then whether a route is given and its moe_route_params_v2
// (paramsToScalars), then the layer's struct_size; the buffers x, logits, w13, w2, y, ids,
// gates, bias.
int invokeLayer(void* symbol, const int64_t* s, void* const* b) {
  moe_layer_params_v1 p{};
  p.struct_size = static_cast<uint32_t>(s[8 + kParamsScalars]);
  p.tokens = static_cast<int32_t>(s[0]);
  p.hidden = static_cast<int32_t>(s[1]);
  p.intermediate = static_cast<int32_t>(s[2]);
  p.experts = static_cast<int32_t>(s[3]);
  p.k = static_cast<int32_t>(s[4]);
  p.activation = static_cast<int32_t>(s[5]);
  p.dtype = static_cast<int32_t>(s[6]);
  moe_route_params_v2 route{};
  if (s[7] != 0) {
    route = paramsFromScalars(s + 8, static_cast<const float*>(b[7]));
    p.route = &route;
  }
  auto fn = reinterpret_cast<LayerEntry>(symbol);
  return fn(&p, b[0], static_cast<const float*>(b[1]), b[2], b[3], static_cast<float*>(b[4]),
            static_cast<int32_t*>(b[5]), static_cast<float*>(b[6]));
}

class LibraryLayer final : public LayerKernel {
 public:
  LibraryLayer(std::string name, Contract contract, std::unique_ptr<Door> door)
      : LayerKernel(std::move(name), std::move(contract)), door_(std::move(door)) {}

 protected:
  int call(const LayerCase& c, const moe_layer_params_v1& p, const void* x, const float* logits,
           const void* w13, const void* w2, float* y, int32_t* ids, float* gates, double timeout,
           RouteFault& fault, bool& stopped, bool&) const override {
    const moe_route_params_v2* r = p.route;
    std::array<int64_t, 9 + kParamsScalars> scalars{
        p.tokens, p.hidden, p.intermediate, p.experts, p.k, p.activation, p.dtype, r ? 1 : 0};
    static_assert(scalars.size() <= kDoorMaxScalars);
    if (r) paramsToScalars(*r, scalars.data() + 8);
    scalars[8 + kParamsScalars] = p.struct_size;
    // The buffers as the case holds them: a call outside the domain (layer_case.hpp,
    // LayerBadCall) passes sizes its buffers do not have, or NULL.
    const size_t T = static_cast<size_t>(c.tokens), H = static_cast<size_t>(c.hidden),
                 k = static_cast<size_t>(c.k);
    const size_t in = c.dtype == LayerDtype::kBf16 ? 2 : 4;
    auto buffer = [](const char* name, const void* at, size_t bytes, bool output) {
      return DoorBuffer{name, const_cast<void*>(at), at ? bytes : 0, output, at == nullptr};
    };
    DoorBuffer buffers[] = {
        buffer("x", x, c.x.size() * in, false),
        buffer("logits", logits, c.logits.size() * 4, false),
        buffer("w13", w13, c.w13.size() * in, false),
        buffer("w2", w2, c.w2.size() * in, false),
        buffer("y", y, T * H * 4, true),
        buffer("ids", ids, T * k * 4, true),
        buffer("gates", gates, T * k * 4, true),
        buffer("bias", r ? r->bias : nullptr, c.family ? c.family->bias.size() * 4 : 0, false),
    };
    const DoorCall done = door_->call(scalars, buffers, timeout);
    if (done.fault) fault = RouteFault{done.fault->kind, done.fault->detail, done.fault->tag};
    stopped = done.stopped;
    return done.status;
  }

 private:
  std::unique_ptr<Door> door_;
};

// 60 s plus 10 ns per multiply-add of a plain loop over every expert: a hang is a call that
// stops making progress, not a slow one, and a correct dense layer (forwardSpec as written:
// every expert runs, the unkept ones weighted 0) does E / k times the sparse layer's work.
double defaultTimeout(const LayerCase& c) {
  const double experts = std::max({c.k, c.experts, 1});
  const double work = double(c.tokens) * experts * 3.0 * c.hidden * c.intermediate;
  return 60.0 + 1e-8 * work;
}

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
  // The parameters as the call passes them (outside the domain when the case says so).
  const LayerCallParams cp = layerCallParams(c);
  moe_layer_params_v1 p{};
  p.struct_size = static_cast<uint32_t>(sizeof(moe_layer_params_v1) - cp.structShort);
  p.tokens = cp.tokens;
  p.hidden = cp.hidden;
  p.intermediate = cp.intermediate;
  p.experts = cp.experts;
  p.k = cp.k;
  p.activation = cp.activation;
  p.dtype = cp.dtype;
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
  bool routed = true;
  const auto start = std::chrono::steady_clock::now();
  out.status =
      call(c, p, cp.nullX ? nullptr : x, cp.nullLogits ? nullptr : c.logits.data(),
           cp.nullW13 ? nullptr : w13, cp.nullW2 ? nullptr : w2, cp.nullY ? nullptr : out.y.data(),
           withRouting ? out.ids.data() : nullptr, withRouting ? out.gates.data() : nullptr,
           timeout_ > 0 ? timeout_ : defaultTimeout(c), fault, out.stopped, routed);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.routed = withRouting && routed;
  if (out.stopped) return out;
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

std::unique_ptr<LayerKernel> makeFunctionLayer(std::string name, Contract contract, LayerFn fn) {
  return std::make_unique<CaseFunctionLayer>(std::move(name), std::move(contract), std::move(fn));
}

bool exportsLayer(const std::string& path) {
  return libraryExports(path, std::string(kLayerSymbol));
}

std::unique_ptr<LayerKernel> openLayerLibrary(const std::string& path, const DoorOptions& options) {
  DoorSpec spec;
  spec.symbol = std::string(kLayerSymbol);
  spec.contractSymbol = spec.symbol + "_contract";
  spec.invoke = invokeLayer;
  std::unique_ptr<Door> door = openDoor(path, spec, options);
  Contract contract;
  contract.abi = std::string(kAbiLayerV1);
  if (door->contractText()) {
    try {
      contract = layerContractOf(*door->contractText());
    } catch (const std::invalid_argument& e) {
      throw DoorLoadError(fmt::format("layer library {}: {}", path, e.what()));
    }
  }
  return std::make_unique<LibraryLayer>(libraryRouterName(path, contract), contract,
                                        std::move(door));
}

}  // namespace moe::fuzz
