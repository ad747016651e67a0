// Every implementation behind ONE interface, so that the campaign, the verdict and the
// shrinker never ask which kind of router they hold: built-in routers by name (moe::findRouter), a
// user's shared library (dlopen of moe_route_v1 and, optionally, moe_route_v1_contract), the
// binary32 spec itself, and routers that a test build registers (the broken routers of
// tests/fuzz/broken/). A router that cannot run a case abstains instead of failing.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/route_status.hpp"
#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// A failure of the call itself rather than of its output: the router crashed, hung, wrote
// outside its buffers, or returned a status the ABI does not define. A finding, never the
// end of the run.
struct RouteFault {
  ViolationKind kind = ViolationKind::kNone;  // kCrash, kHang, kOutOfBoundsWrite, kBadStatus
  std::string detail;                         // "killed by SIGSEGV (signal 11)", ...
  std::string tag;  // what tells two faults of one kind apart in a signature: "SIGSEGV"
};

// What one call produced: ids and gates (tokens * k each), an abstention, or a fault (then
// ids and gates hold the sentinels they were filled with).
struct RouteOutput {
  int status = MOE_ROUTE_OK;  // what the call returned (MOE_ROUTE_E* on failure)
  bool abstained = false;
  std::string abstainReason;  // "returned 3", "ISA unavailable", ...
  std::optional<RouteFault> fault;
  std::vector<int32_t> ids;
  std::vector<float> gates;
  double seconds = 0;  // the call's wall time (a slow call is told from a hang by it)
};

class Router {
 public:
  virtual ~Router() = default;
  const std::string& name() const { return name_; }
  const Contract& contract() const { return contract_; }
  // Runs the router; `threads` reaches routers that take it (0 = all cores).
  // With `family`, the call is moe_route_v2's (the contract's abi must be moe_route_v2; a
  // v1 router abstains); without, moe_route_v1's. MOE_ROUTE_EBADPARAMS is a status of
  // v2 only: the output then records it and abstains, and the verdict decides (docs/fuzz.md).
  RouteOutput route(int32_t tokens, int32_t experts, int32_t k, std::span<const float> logits,
                    int32_t threads, const Family* family = nullptr) const;
  // The watchdog of the next calls, in seconds (a campaign sets it from the router's fitted
  // cost: CallCost::hangAfter), for routers that have one (an isolated library); 0: the
  // router's default. --call-timeout, when given, wins.
  virtual void setCallTimeout(double seconds) const { (void)seconds; }

 protected:
  Router(std::string name, Contract contract)
      : name_(std::move(name)), contract_(std::move(contract)) {}
  // Returns the router's status (0 = success); ids/gates are pre-filled with sentinels.
  virtual int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                   float* gates, int32_t threads) const = 0;
  // As call, for routers that can tell a fault of the call itself (a crash, a hang, a write
  // outside the buffers): they set `fault` and the status is ignored. By default, call.
  virtual int callChecked(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                          int32_t* ids, float* gates, int32_t threads, RouteFault& fault) const {
    (void)fault;
    return call(tokens, experts, k, logits, ids, gates, threads);
  }
  // moe_route_v2 with the case's family (raw parameters: they may be invalid, and must then
  // reach the kernel as they are). By default the router has no v2.
  virtual int callV2(const Family& family, int32_t tokens, int32_t experts, int32_t k,
                     const float* logits, int32_t* ids, float* gates, int32_t threads,
                     RouteFault& fault) const {
    (void)family, (void)tokens, (void)experts, (void)k, (void)logits, (void)ids, (void)gates,
        (void)threads, (void)fault;
    return MOE_ROUTE_EUNSUPPORTED;
  }
  virtual bool available() const { return true; }

 private:
  std::string name_;
  Contract contract_;
};

// Thrown when a name is unknown or a library cannot be loaded (the CLI exits 2).
class RouterLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a shared library is run (docs/fuzz.md "Isolation").
struct RouterOptions {
  // false: the library runs in a child process (a fork server) with guarded output buffers
  // and a watchdog, so that a crash, a hang or a stray write is a finding; true: in this
  // process (the libFuzzer targets, which catch crashes themselves, and --in-process).
  bool inProcess = false;
  // The watchdog: a call that has not returned after this many seconds is a hang. 0: the
  // campaign's (ten budgets from the router's own cost, at least 60 s), else 60 s plus
  // 20 ns per unit of the call's work (CallCost).
  double callTimeout = 0;
  // Set by a signal handler: a call in progress is abandoned (not a finding).
  const volatile std::sig_atomic_t* stop = nullptr;
  // Which entry point to fuzz: "" (a library: moe_route_v2 when it exports it, else
  // moe_route_v1; a built-in router or spec32: v1), or kAbiV1 / kAbiV2 to insist.
  std::string abi;
};

// NAME (built-in router, "spec32", a registered test-only name) or a path to a shared
// library (contains '/' or ends in ".so", relative to the current directory). Throws
// RouterLoadError with the reason.
std::unique_ptr<Router> openRouter(std::string_view nameOrPath, const RouterOptions& options = {});

// True when openRouter reads `nameOrPath` as a shared library's path (it contains '/' or
// ends in ".so"), not as a router's name.
bool isLibraryPath(std::string_view nameOrPath);

// $MOE_ABI: the entry point fuzz_external fuzzes MOE_IMPL through and `moe-oracle
// reproduce` decodes for (RouterOptions::abi: "" when unset, kAbiV1 or kAbiV2), read by one
// function so that a crash input reproduces as the target saw it. Throws
// std::invalid_argument for another value.
std::string abiFromEnv();

// Test-only routers: openRouter asks each registered opener, in order, about a name that is
// neither a path, "spec32" nor a built-in router; an opener returns nullptr for a name that
// is not its own. The shipped command registers none; tests/fuzz/broken/ registers
// "broken-<bug>" (registerBrokenRouters).
using RouterOpener = std::unique_ptr<Router> (*)(std::string_view name);
void registerRouterOpener(RouterOpener opener);

// Names of the built-in routers this build has (available or not on this CPU).
std::vector<std::string> builtinRouterNames();
// For moe_route_v2: one name per distinct kernel, the first router that has it (the probs
// and logits routers of an ISA share their v2 kernel, so fuzzing both would run it twice).
std::vector<std::string> builtinRouterNamesV2();
// True when the built-in router exists and this CPU can run it.
bool builtinRouterAvailable(std::string_view name);

// The binary32 evaluation of the spec as a router: ids = keptExperts on the binary32
// probabilities (Lean's ranking), gates = gatesVecSpec<float>. Always acceptable by design.
// With v2, the family's spec in binary32 (oracle/family.hpp: routeKeptExperts on the
// binary32 keys, routeGatesFromScores), EBADPARAMS outside paramsValid.
std::unique_ptr<Router> makeSpec32Router(bool v2 = false);

}  // namespace moe::fuzz
