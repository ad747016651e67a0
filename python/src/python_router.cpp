#include "python_router.hpp"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <cstring>

#include "family.hpp"
#include "moe/route_abi.h"
#include "python_errors.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

template <class T>
using Dense = py::array_t<T, py::array::c_style | py::array::forcecast>;

}  // namespace

PythonRouter::PythonRouter(std::string name, fuzz::Contract contract, py::object route,
                           py::object unsupported)
    : Router(std::move(name), std::move(contract)),
      route_(std::move(route)),
      unsupported_(std::move(unsupported)) {}

int PythonRouter::call(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                       int32_t* ids, float* gates, int32_t threads) const {
  fuzz::RouteFault fault;
  const int status = callChecked(tokens, experts, k, logits, ids, gates, threads, fault);
  return fault.kind == fuzz::ViolationKind::kNone ? status : MOE_ROUTE_EINTERNAL;
}

int PythonRouter::callChecked(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                              int32_t* ids, float* gates, int32_t, fuzz::RouteFault& fault) const {
  return callPython(tokens, experts, k, logits, ids, gates, fault, false,
                    [&](py::object x) { return route_(x, k); });
}

int PythonRouter::callV2(const fuzz::Family& family, int32_t tokens, int32_t experts, int32_t k,
                         const float* logits, int32_t* ids, float* gates, int32_t,
                         fuzz::RouteFault& fault) const {
  // struct_size is the C struct's; a Python function has no struct to be given short.
  if (family.structShort > 0) return MOE_ROUTE_EBADPARAMS;
  const std::string invalid = fuzz::familyInvalidReason(family, experts);
  return callPython(tokens, experts, k, logits, ids, gates, fault, true,
                    [&](py::object x) { return route_(x, k, familyToTuple(family), invalid); });
}

int PythonRouter::callPython(int32_t tokens, int32_t experts, int32_t k, const float* logits,
                             int32_t* ids, float* gates, fuzz::RouteFault& fault, bool v2,
                             const std::function<py::object(py::object)>& invoke) const {
  if (stop_ != 0) return MOE_ROUTE_EUNSUPPORTED;  // interrupted: end the run, judge nothing
  py::gil_scoped_acquire gil;
  try {
    // Ctrl-C while the judge ran (without the GIL) is handled here, before the next call.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    const size_t logitCount = static_cast<size_t>(tokens) * static_cast<size_t>(experts);
    const size_t slots = static_cast<size_t>(tokens) * static_cast<size_t>(k);
    // A fresh array each call: the function may keep or modify it without touching the case.
    py::array_t<float> x({static_cast<py::ssize_t>(tokens), static_cast<py::ssize_t>(experts)});
    if (logitCount > 0) std::memcpy(x.mutable_data(), logits, logitCount * sizeof(float));
    const py::object answer = invoke(x);
    if (v2 && answer.is_none()) return MOE_ROUTE_EBADPARAMS;
    const auto out = answer.cast<py::tuple>();
    if (v2 && out.empty()) return 0;  // invalid parameters accepted: the verdict's finding
    const auto outIds = Dense<int32_t>::ensure(out[0]);
    const auto outGates = Dense<float>::ensure(out[1]);
    if (!outIds || !outGates || static_cast<size_t>(outIds.size()) != slots ||
        static_cast<size_t>(outGates.size()) != slots) {
      fault.kind = fuzz::ViolationKind::kException;
      fault.tag = "output";
      fault.detail =
          fmt::format("the route wrapper returned arrays that are not {} x {}", tokens, k);
      return 0;
    }
    if (slots > 0) {
      std::memcpy(ids, outIds.data(), slots * sizeof(int32_t));
      std::memcpy(gates, outGates.data(), slots * sizeof(float));
    }
    return 0;
  } catch (py::error_already_set& e) {
    if (e.matches(unsupported_)) return MOE_ROUTE_EUNSUPPORTED;
    if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
      stop_ = 1;
      return MOE_ROUTE_EUNSUPPORTED;
    }
    fault.kind = fuzz::ViolationKind::kException;
    fault.tag = exceptionTag(e);
    fault.detail = fmt::format("the function raised {}:\n{}", fault.tag, exceptionTraceback(e));
    return 0;
  } catch (const py::cast_error& e) {
    fault.kind = fuzz::ViolationKind::kException;
    fault.tag = "output";
    fault.detail = fmt::format("the route wrapper did not return (ids, gates): {}", e.what());
    return 0;
  }
}

}  // namespace moe::python
