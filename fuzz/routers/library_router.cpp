// A user's shared library as a Router: moe_route_v1 or moe_route_v2 called through a door
// (door.hpp), in a child process with guarded outputs and a watchdog, or in this process.
#include "moe/fuzz/library_router.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>

#include "moe/fuzz/door.hpp"
#include "params_v2.hpp"

namespace moe::fuzz {

namespace {

using AbiRoute = int (*)(int32_t, int32_t, int32_t, const float*, int32_t*, float*);

// The door's message of a v2 call is the moe_route_params_v2 itself (paramsToScalars).
static_assert(kParamsScalars <= kDoorMaxScalars);

// The buffers of a call: v1 logits, ids, gates; v2 logits, bias, ids, gates.
int invokeV1(void* symbol, const int64_t* s, void* const* b) {
  return reinterpret_cast<AbiRoute>(symbol)(
      static_cast<int32_t>(s[0]), static_cast<int32_t>(s[1]), static_cast<int32_t>(s[2]),
      static_cast<const float*>(b[0]), static_cast<int32_t*>(b[1]), static_cast<float*>(b[2]));
}

int invokeV2(void* symbol, const int64_t* s, void* const* b) {
  const moe_route_params_v2 p = paramsFromScalars(s, static_cast<const float*>(b[1]));
  return reinterpret_cast<AbiRouteV2>(symbol)(
      &p, static_cast<const float*>(b[0]), static_cast<int32_t*>(b[2]), static_cast<float*>(b[3]));
}

// The entry point the library is fuzzed through, picked where it is loaded (chooseAbi).
DoorSpec routeDoorSpec(const std::string& path, const std::string& abi) {
  DoorSpec spec;
  spec.noun = "router library";
  spec.choose = [path, abi](void* handle, DoorSpec& s) {
    const bool v2 = chooseAbi(abi, dlsym(handle, "moe_route_v1") != nullptr,
                              dlsym(handle, "moe_route_v2") != nullptr, path);
    s.symbol = v2 ? "moe_route_v2" : "moe_route_v1";
    s.contractSymbol = s.symbol + "_contract";
    s.invoke = v2 ? invokeV2 : invokeV1;
  };
  return spec;
}

// The watchdog without a campaign's fitted cost (replay, explain, reproduce): 60 s plus
// 20 ns per (token, expert, kept slot). A hang is a call that stops making progress, and a
// correct but naive kernel (one pass over E per kept slot, O(T E k)) takes seconds on the
// largest cases: E = k = 4,096, T = 240 is 4e9 steps.
double defaultTimeout(size_t logits, size_t slots, int32_t k, int32_t experts) {
  const double perStep = 2e-8;
  const double keptPerToken = std::max(1, std::min(k, experts));
  return 60.0 + perStep * (static_cast<double>(logits) * keptPerToken + static_cast<double>(slots));
}

// The door's fault told in the router's words: the watchdog's origin, and a stray past an
// output in entries of tokens * k (a write before one, or a crash, the door tells as is).
RouteFault routeFault(const DoorFault& f, size_t slots, double limit, bool callTimeoutFlag) {
  RouteFault out{f.kind, f.detail, f.tag};
  if (f.kind == ViolationKind::kHang) {
    out.detail = fmt::format(
        "the call did not return within {:.3g} s (the watchdog: {}); the child was killed", limit,
        callTimeoutFlag ? "--call-timeout"
                        : "ten times the call's budget from the router's own cost on this run, "
                          "at least 60 s; --call-timeout sets it");
  } else if (f.kind == ViolationKind::kOutOfBoundsWrite && (f.tag == "ids" || f.tag == "gates")) {
    out.detail = fmt::format(
        "it {} past the end of {} (tokens * k = {} entries): the guard page after {} was hit",
        f.read ? "read" : "wrote", f.tag, slots, f.tag);
  }
  return out;
}

class LibraryRouter final : public Router {
 public:
  LibraryRouter(std::string name, Contract contract, std::unique_ptr<Door> door,
                RouterOptions options)
      : Router(std::move(name), std::move(contract)), door_(std::move(door)), options_(options) {}

  void setCallTimeout(double seconds) const override { campaignTimeout_ = seconds; }

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t threads) const override {
    RouteFault ignored;
    return callChecked(tokens, experts, k, logits, ids, gates, threads, ignored);
  }

  int callChecked(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                  float* gates, int32_t, RouteFault& fault) const override {
    const int64_t scalars[] = {tokens, experts, k};
    return run(scalars, nullptr, tokens, experts, k, logits, ids, gates, fault);
  }

  int callV2(const Family& f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
             int32_t* ids, float* gates, int32_t, RouteFault& fault) const override {
    const moe_route_params_v2 p = paramsV2(f, tokens, experts, k, nullptr);
    std::array<int64_t, kParamsScalars> scalars{};
    paramsToScalars(p, scalars.data());
    return run(scalars, &f.bias, tokens, experts, k, logits, ids, gates, fault);
  }

 private:
  // `bias`: a v2 call's (possibly empty: NULL); nullptr for a v1 call.
  int run(std::span<const int64_t> scalars, const std::vector<float>* bias, int32_t tokens,
          int32_t experts, int32_t k, const float* logits, int32_t* ids, float* gates,
          RouteFault& fault) const {
    const size_t L = static_cast<size_t>(tokens) * static_cast<size_t>(experts);
    const size_t S = static_cast<size_t>(tokens) * static_cast<size_t>(k);
    // The inputs are neither guarded nor checked (the logits start on a page, as a caller's
    // allocation would); the outputs end at guard pages after canary bytes.
    std::vector<DoorBuffer> buffers;
    buffers.push_back({"logits", const_cast<float*>(logits), L * 4, false, L == 0, false});
    if (bias) {
      buffers.push_back({"bias", const_cast<float*>(bias->data()), bias->size() * 4, false,
                         bias->empty(), false});
    }
    buffers.push_back({"ids", ids, S * 4, true, S == 0});
    buffers.push_back({"gates", gates, S * 4, true, S == 0});
    const double limit = options_.callTimeout > 0 ? options_.callTimeout
                         : campaignTimeout_ > 0   ? campaignTimeout_
                                                  : defaultTimeout(L, S, k, experts);
    const DoorCall r = door_->call(scalars, buffers, limit);
    if (r.stopped) return MOE_ROUTE_EINTERNAL;  // an abstention; the run is ending anyway
    if (r.fault) {
      fault = routeFault(*r.fault, S, limit, options_.callTimeout > 0);
      return MOE_ROUTE_OK;
    }
    return r.status;
  }

  std::unique_ptr<Door> door_;
  RouterOptions options_;
  mutable double campaignTimeout_ = 0;  // setCallTimeout: the campaign's watchdog
};

}  // namespace

std::string libraryRouterName(const std::string& path, const Contract& contract) {
  std::string name = contract.name;
  if (name.empty()) name = std::filesystem::path(path).stem().string();
  if (name.rfind("lib", 0) == 0) name = name.substr(3);
  return name;
}

std::unique_ptr<Router> openLibraryRouter(const std::string& path, const RouterOptions& options) {
  DoorOptions doorOptions;
  doorOptions.inProcess = options.inProcess;
  doorOptions.callTimeout = options.callTimeout;
  doorOptions.stop = options.stop;
  std::unique_ptr<Door> door;
  try {
    door = openDoor(path, routeDoorSpec(path, options.abi), doorOptions);
  } catch (const DoorLoadError& e) {
    throw RouterLoadError(e.what());
  }
  const bool v2 = door->symbol() == "moe_route_v2";
  Contract contract;
  if (v2) contract.abi = std::string(kAbiV2);
  if (door->contractText()) {
    try {
      contract = parseContractFor(*door->contractText(), v2);
    } catch (const std::invalid_argument& e) {
      throw RouterLoadError(fmt::format("router library {}: {}", path, e.what()));
    }
  }
  return std::make_unique<LibraryRouter>(libraryRouterName(path, contract), contract,
                                         std::move(door), options);
}

bool chooseAbi(const std::string& abi, bool hasV1, bool hasV2, const std::string& path) {
  if (abi == kAbiV1) {
    if (!hasV1) {
      throw RouterLoadError(
          fmt::format("router library {} does not export moe_route_v1 (extern \"C\")", path));
    }
    return false;
  }
  if (abi == kAbiV2 && !hasV2) {
    throw RouterLoadError(
        fmt::format("router library {} does not export moe_route_v2 (extern \"C\")", path));
  }
  if (!abi.empty() && abi != kAbiV2) {
    throw RouterLoadError(fmt::format("unknown ABI \"{}\" (moe_route_v1 or moe_route_v2)", abi));
  }
  if (!hasV1 && !hasV2) {
    throw RouterLoadError(fmt::format(
        "router library {} exports neither moe_route_v1 nor moe_route_v2 (extern \"C\")", path));
  }
  return hasV2;
}

Contract parseContractFor(std::string_view text, bool v2) {
  Contract c = parseContract(text);
  // A v2 contract without "abi" is v2's; one that names v1 is for the other entry point.
  const bool saysAbi = text.find("\"abi\"") != std::string_view::npos;
  if (v2 && !saysAbi) c.abi = std::string(kAbiV2);
  if (c.v2() != v2) {
    throw std::invalid_argument(
        fmt::format("moe_route_{}_contract says \"abi\": \"{}\"", v2 ? "v2" : "v1", c.abi));
  }
  return c;
}

}  // namespace moe::fuzz
