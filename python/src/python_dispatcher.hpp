// A Python function as a dispatch kernel: the Dispatcher subclass of the Python door
// (moe_oracle.fuzz_dispatch). The campaign, the shrinker and the judge run in C++ with the
// GIL released; each call takes the GIL, hands the function a fresh int32 array of the
// case's ids [T, k] and copies what it returns into the buffers the verdict reads, as a C
// kernel's writes.
//
// What the function does other than return is told apart, as PythonRouter does:
//   - it raises moe_oracle.Unsupported: an abstention (MOE_ROUTE_EUNSUPPORTED);
//   - it raises anything else (or returns the wrong thing): a finding of kind `exception`,
//     tagged with the exception's type and carrying Python's traceback;
//   - a KeyboardInterrupt or SystemExit: the stop flag is set, the call is abandoned (not
//     judged) and the campaign ends with its summary.
// A Python function has no max_rows and no NULL buffers: the campaign draws cases inside
// the domain only (DispatchDraw::domainOnly), with max_rows at least the padded length.
#pragma once

#include <pybind11/pybind11.h>

#include <csignal>
#include <string>

#include "moe/fuzz/dispatcher.hpp"

namespace moe::python {

class PythonDispatcher final : public fuzz::Dispatcher {
 public:
  // `dispatch(ids, k, experts, block, capacity)` returns (sorted_slots int32 [n],
  // block_expert int32 [m], rows), already brought to those dtypes by the package's Python
  // side (moe_oracle/_dispatch.py). `unsupported` is the moe_oracle.Unsupported type.
  // Built and destroyed with the GIL held: it owns Python references.
  PythonDispatcher(std::string name, fuzz::DispatchContract contract, pybind11::object dispatch,
                   pybind11::object unsupported);

  const volatile std::sig_atomic_t* stopFlag() const { return &stop_; }
  bool interrupted() const { return stop_ != 0; }

 protected:
  fuzz::DoorCall call(const fuzz::DispatchCase& c, std::span<fuzz::DoorBuffer> buffers,
                      double timeout) const override;

 private:
  pybind11::object dispatch_;
  pybind11::object unsupported_;
  mutable volatile std::sig_atomic_t stop_ = 0;
};

}  // namespace moe::python
