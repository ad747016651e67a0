// A Python function as a router: the one Router subclass of the Python door. The
// campaign, the shrinker and the judge run in C++ with the GIL released; each call takes the
// GIL, hands the function a fresh float32 array [T, E] and copies its (ids, gates) back.
//
// What the function does other than return is told apart, never a crash of the fuzzer:
//   - it raises moe_oracle.Unsupported: an abstention (status MOE_ROUTE_EUNSUPPORTED), the
//     Python spelling of a C kernel's "I do not take this shape";
//   - it raises anything else (or returns the wrong thing): a RouteFault of kind
//     `exception`, tagged with the exception's type and carrying Python's traceback;
//   - for a moe_route_v2 contract (callV2): the function is called with the case's family as
//     well; a ValueError on parameters outside the domain is MOE_ROUTE_EBADPARAMS (the
//     wrapper returns None), and a short struct_size, which Python cannot be given, is
//     answered EBADPARAMS by the door itself, as a C binding's marshalling would;
//   - a KeyboardInterrupt or SystemExit (Ctrl-C reaches Python code only inside the
//     function): the stop flag is set, so the campaign ends cleanly with its summary, and
//     every later call abstains at once so that a shrink in progress ends too.
#pragma once

#include <pybind11/pybind11.h>

#include <csignal>
#include <functional>
#include <string>

#include "moe/fuzz/router.hpp"

namespace moe::python {

class PythonRouter final : public fuzz::Router {
 public:
  // `route(logits, k)` returns (ids int32 [T, k], gates float32 [T, k]), already brought to
  // those dtypes and shapes by the package's Python side (moe_oracle/_arrays.py); the
  // check here only guards the copy. `unsupported` is the moe_oracle.Unsupported type.
  // With a v2 contract, route(logits, k, family, invalid) gets the family's raw tuple
  // (family.hpp) and why it is invalid ('' when valid), and returns (ids, gates), None
  // (MOE_ROUTE_EBADPARAMS) or () (invalid parameters accepted: status 0, nothing written).
  PythonRouter(std::string name, fuzz::Contract contract, pybind11::object route,
               pybind11::object unsupported);
  // Built and destroyed with the GIL held (the bindings do): it owns Python references.

  // Set once the function was interrupted (Ctrl-C, SIGTERM mapped to KeyboardInterrupt);
  // CampaignOptions::stop points here.
  const volatile std::sig_atomic_t* stopFlag() const { return &stop_; }
  bool interrupted() const { return stop_ != 0; }

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t threads) const override;
  int callChecked(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                  float* gates, int32_t threads, fuzz::RouteFault& fault) const override;
  int callV2(const fuzz::Family& family, int32_t tokens, int32_t experts, int32_t k,
             const float* logits, int32_t* ids, float* gates, int32_t threads,
             fuzz::RouteFault& fault) const override;

 private:
  // The call both entry points share: `invoke(x)` calls route_ on the fresh logits array.
  int callPython(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                 float* gates, fuzz::RouteFault& fault, bool v2,
                 const std::function<pybind11::object(pybind11::object)>& invoke) const;
  pybind11::object route_;
  pybind11::object unsupported_;
  mutable volatile std::sig_atomic_t stop_ = 0;
};

}  // namespace moe::python
