// Every implementation behind ONE interface (style.md, cryptofuzz's module): built-in
// routers by name (moe::findRouter), a user's shared library (dlopen of moe_route_v1 and,
// optionally, moe_route_v1_contract), the binary32 spec itself, and the test-only broken
// routers. A router that cannot run a case abstains instead of failing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/contract.hpp"

namespace moe::fuzz {

// What one call produced: ids and gates (tokens * k each), or an abstention.
struct RouteOutput {
  bool abstained = false;
  std::string abstainReason;  // "returned 3", "ISA unavailable", ...
  std::vector<int32_t> ids;
  std::vector<float> gates;
};

class Router {
 public:
  virtual ~Router() = default;
  const std::string& name() const { return name_; }
  const Contract& contract() const { return contract_; }
  // Runs the router; `threads` reaches routers that take it (0 = all cores).
  RouteOutput route(int32_t tokens, int32_t experts, int32_t k, std::span<const float> logits,
                    int32_t threads) const;

 protected:
  Router(std::string name, Contract contract)
      : name_(std::move(name)), contract_(std::move(contract)) {}
  // Returns the router's status (0 = success); ids/gates are pre-filled with sentinels.
  virtual int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                   float* gates, int32_t threads) const = 0;
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

// NAME (built-in router, "spec32", "broken-<bug>") or a path to a shared library (contains
// '/' or ends in ".so"). Throws RouterLoadError with the reason.
std::unique_ptr<Router> openRouter(std::string_view nameOrPath);

// Names of the built-in routers this build has (available or not on this CPU).
std::vector<std::string> builtinRouterNames();
// True when the built-in router exists and this CPU can run it.
bool builtinRouterAvailable(std::string_view name);

// The binary32 evaluation of the spec as a router: ids = keptExperts on the binary32
// probabilities (Lean's ranking), gates = gatesVecSpec<float>. Always acceptable by design.
std::unique_ptr<Router> makeSpec32Router();

}  // namespace moe::fuzz
