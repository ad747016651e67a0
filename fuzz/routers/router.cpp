#include "moe/fuzz/router.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "moe/fuzz/library_router.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"
#include "moe/routers.hpp"
#include "params_v2.hpp"
#include "spec32_family.hpp"

namespace moe::fuzz {

// Slots are pre-filled with values no correct router leaves behind (id -2, a signalling
// NaN gate), so a slot the router forgot to write fails the structure check.
RouteOutput Router::route(int32_t tokens, int32_t experts, int32_t k, std::span<const float> logits,
                          int32_t threads, const Family* family) const {
  RouteOutput out;
  if (!available()) {
    out.abstained = true;
    out.abstainReason = "not available on this CPU";
    return out;
  }
  if (family && !contract_.v2()) {
    out.abstained = true;
    out.abstainReason = "a moe_route_v1 router has no routing family (a moe_route_v2 case)";
    return out;
  }
  const size_t slots = static_cast<size_t>(tokens) * static_cast<size_t>(k);
  out.ids.assign(slots, -2);
  out.gates.assign(slots, std::bit_cast<float>(0x7fa00000u));
  RouteFault fault;
  // A v2 router given a v1 case: the family that v1's probabilities mode is (Mixtral's).
  const Family mixtral;
  if (!family && contract_.v2()) family = &mixtral;
  const auto start = std::chrono::steady_clock::now();
  const int status = family ? callV2(*family, tokens, experts, k, logits.data(), out.ids.data(),
                                     out.gates.data(), threads, fault)
                            : callChecked(tokens, experts, k, logits.data(), out.ids.data(),
                                          out.gates.data(), threads, fault);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.status = status;
  if (fault.kind != ViolationKind::kNone) {
    out.fault = std::move(fault);
    return out;
  }
  // route_abi.h defines 0 to 5, and 6 (EBADPARAMS) for v2; anything else is a kernel bug,
  // not an abstention.
  const int maxStatus = family ? MOE_ROUTE_EBADPARAMS : MOE_ROUTE_EINTERNAL;
  if (status < 0 || status > maxStatus) {
    out.fault = RouteFault{ViolationKind::kBadStatus,
                           fmt::format("returned {}, a status route_abi.h does not define "
                                       "(0 success, 1 to {} the MOE_ROUTE_E* codes{})",
                                       status, maxStatus, family ? "" : " of moe_route_v1"),
                           fmt::format("status-{}", status)};
    return out;
  }
  if (status != MOE_ROUTE_OK) {
    out.abstained = true;
    out.abstainReason = fmt::format("returned {}", status);
  }
  return out;
}

namespace {

class BuiltinAdapter final : public Router {
 public:
  // available() is asked once: it queries the CPU's targets, too slow to repeat per call.
  BuiltinAdapter(const moe::BuiltinRouter& r, bool v2)
      : Router(std::string(r.name), parseContract(v2 ? r.contract_v2_json : r.contract_json)),
        router_(r),
        available_(r.available()) {}

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t threads) const override {
    return router_.route(tokens, experts, k, logits, ids, gates, threads);
  }
  int callV2(const Family& f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
             int32_t* ids, float* gates, int32_t threads, RouteFault&) const override {
    const moe_route_params_v2 p =
        paramsV2(f, tokens, experts, k, f.bias.empty() ? nullptr : f.bias.data());
    return router_.route_v2(&p, logits, ids, gates, threads);
  }
  bool available() const override { return available_; }

 private:
  const moe::BuiltinRouter& router_;
  bool available_;
};

class Spec32Router final : public Router {
 public:
  Spec32Router() : Router("spec32", specContract()) {}

  static Contract specContract() {
    Contract c;
    c.name = "spec32";
    c.selectsOn = SelectsOn::kProbabilities;
    c.slotOrder = SlotOrder::kRank;
    c.batchInvariant = true;
    c.expMaxUlp = 1.0;  // host expf: glibc's is within 1 ulp of the correctly rounded value
    c.nonfiniteRows = "the spec in binary32: Lean's total ranking of NaN probabilities";
    return c;
  }

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t) const override {
    if (tokens < 0 || experts < 1 || k < 0) return MOE_ROUTE_EBADSIZE;
    for (int32_t t = 0; t < tokens; ++t) {
      std::span<const float> row(logits + int64_t{t} * experts, static_cast<size_t>(experts));
      // NaN logits are outside the spec's domain: abstain. (With ENULL, the status this
      // router has always given there: its abstentions keep their reason, "returned 2".)
      if (std::any_of(row.begin(), row.end(), [](float v) { return std::isnan(v); })) {
        return MOE_ROUTE_ENULL;
      }
      const std::vector<float> p = oracle::softmaxVecSpec(row);
      std::vector<float> g(p.size(), std::numeric_limits<float>::quiet_NaN());
      std::vector<size_t> order;
      if (std::all_of(p.begin(), p.end(), [](float v) { return std::isnan(v); })) {
        // A row that is not real (+inf, all -inf) has only NaN probabilities; every
        // comparison is false, so Lean's beats is j < i and the ranking is index order.
        for (size_t i = 0; i < std::min(p.size(), static_cast<size_t>(k)); ++i) order.push_back(i);
      } else if (std::any_of(p.begin(), p.end(), [](float v) { return std::isnan(v); })) {
        return MOE_ROUTE_ENULL;  // mixed NaN probabilities need NaN logits
      } else {
        order = oracle::keptExperts(static_cast<size_t>(k), std::span<const float>(p));
        g = oracle::gatesFromProbs(static_cast<size_t>(k), std::span<const float>(p));
      }
      for (int32_t s = 0; s < k; ++s) {
        int64_t slot = int64_t{t} * k + s;
        if (static_cast<size_t>(s) < order.size()) {
          ids[slot] = static_cast<int32_t>(order[s]);
          gates[slot] = g[order[s]];
        } else {
          ids[slot] = -1;
          gates[slot] = 0.0f;
        }
      }
    }
    return MOE_ROUTE_OK;
  }
};

// Openers of test-only router names (registerRouterOpener), asked in order.
std::vector<RouterOpener>& extraOpeners() {
  static std::vector<RouterOpener> openers;
  return openers;
}

}  // namespace

std::unique_ptr<Router> makeSpec32Router(bool v2) {
  if (v2) return makeSpec32FamilyRouter();
  return std::make_unique<Spec32Router>();
}

bool isLibraryPath(std::string_view nameOrPath) {
  return nameOrPath.find('/') != std::string_view::npos || nameOrPath.ends_with(".so");
}

std::string abiFromEnv() {
  const char* text = std::getenv("MOE_ABI");
  std::string abi = text ? text : "";
  if (!abi.empty() && abi != kAbiV1 && abi != kAbiV2) {
    throw std::invalid_argument(
        fmt::format("MOE_ABI={}: expected {} or {} (or unset)", abi, kAbiV1, kAbiV2));
  }
  return abi;
}

std::unique_ptr<Router> openRouter(std::string_view nameOrPath, const RouterOptions& options) {
  std::string s(nameOrPath);
  if (s.empty()) throw RouterLoadError("empty router name");
  const bool isPath = isLibraryPath(s);
  // A path is relative to the current directory; dlopen would search the library path
  // for a name without '/', so `--impl lib.so` is made `./lib.so`.
  if (isPath) {
    const std::string path = s.find('/') == std::string::npos ? "./" + s : s;
    if (!std::filesystem::exists(path)) {
      throw RouterLoadError(fmt::format("cannot load router library {}: no such file", path));
    }
    return openLibraryRouter(path, options);
  }
  if (!options.abi.empty() && options.abi != kAbiV1 && options.abi != kAbiV2) {
    throw RouterLoadError(
        fmt::format("unknown ABI \"{}\" (moe_route_v1 or moe_route_v2)", options.abi));
  }
  const bool v2 = options.abi == kAbiV2;
  if (s == "spec32") return makeSpec32Router(v2);
  if (const moe::BuiltinRouter* r = moe::findRouter(s)) {
    try {
      return std::make_unique<BuiltinAdapter>(*r, v2);
    } catch (const std::invalid_argument& e) {
      throw RouterLoadError(fmt::format("built-in router {}: {}", s, e.what()));
    }
  }
  for (RouterOpener opener : extraOpeners()) {
    if (auto router = opener(s)) return router;
  }
  std::string known = "spec32";
  for (const auto& n : builtinRouterNames()) known += ", " + n;
  throw RouterLoadError(fmt::format(
      "unknown router \"{}\" (built-in: {}; or a path to a shared library exporting moe_route_v1)",
      s, known));
}

void registerRouterOpener(RouterOpener opener) {
  extraOpeners().push_back(opener);
}

std::vector<std::string> builtinRouterNames() {
  std::vector<std::string> names;
  for (const auto& r : moe::builtinRouters()) names.emplace_back(r.name);
  return names;
}

std::vector<std::string> builtinRouterNamesV2() {
  std::vector<std::string> names;
  std::vector<moe::RouteV2Fn> kernels;
  for (const auto& r : moe::builtinRouters()) {
    if (std::find(kernels.begin(), kernels.end(), r.route_v2) != kernels.end()) continue;
    kernels.push_back(r.route_v2);
    names.emplace_back(r.name);
  }
  return names;
}

bool builtinRouterAvailable(std::string_view name) {
  const moe::BuiltinRouter* r = moe::findRouter(name);
  return r && r->available();
}

}  // namespace moe::fuzz
