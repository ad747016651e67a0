#include "python_dispatcher.hpp"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include "python_errors.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

using Dense = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

// The route_abi.h statuses moe_dispatch_v1 shares, for what a function's call amounts to.
constexpr int kUnsupported = 4;

// Copies the function's list into the kernel's buffer as a C kernel's writes would land:
// entries past the buffer are dropped (the ABI's buffer holds max_rows or its blocks), and
// entries the function did not give keep their sentinel, which the verdict reads as unwritten.
void copyInto(const Dense& list, fuzz::DoorBuffer& buffer) {
  if (buffer.null || buffer.data == nullptr) return;
  const size_t entries = buffer.bytes / sizeof(int32_t);
  const size_t n = std::min(entries, static_cast<size_t>(list.size()));
  if (n > 0) std::memcpy(buffer.data, list.data(), n * sizeof(int32_t));
}

fuzz::DoorFault exceptionFault(std::string tag, std::string detail) {
  return fuzz::DoorFault{fuzz::ViolationKind::kException, std::move(detail), std::move(tag)};
}

}  // namespace

PythonDispatcher::PythonDispatcher(std::string name, fuzz::DispatchContract contract,
                                   py::object dispatch, py::object unsupported)
    : Dispatcher(std::move(name), std::move(contract)),
      dispatch_(std::move(dispatch)),
      unsupported_(std::move(unsupported)) {}

fuzz::DoorCall PythonDispatcher::call(const fuzz::DispatchCase& c,
                                      std::span<fuzz::DoorBuffer> buffers, double) const {
  fuzz::DoorCall out;
  if (stop_ != 0) {  // interrupted: every later call is abandoned, so a shrink ends too
    out.stopped = true;
    return out;
  }
  const auto start = std::chrono::steady_clock::now();
  py::gil_scoped_acquire gil;
  try {
    // Ctrl-C while the judge ran (without the GIL) is handled here, before the next call.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    // A fresh array each call: the function may keep or modify it without touching the case.
    py::array_t<int32_t> ids({static_cast<py::ssize_t>(c.tokens), static_cast<py::ssize_t>(c.k)});
    if (!c.ids.empty()) std::memcpy(ids.mutable_data(), c.ids.data(), c.ids.size() * 4);
    const py::object answer = dispatch_(ids, c.k, c.experts, c.block, c.capacity);
    const auto parts = answer.cast<py::tuple>();
    if (parts.size() != 3) throw py::cast_error("not a tuple of three");
    const auto sorted = Dense::ensure(parts[0]);
    const auto blocks = Dense::ensure(parts[1]);
    if (!sorted || !blocks) throw py::cast_error("sorted_slots or block_expert is not int32");
    const int64_t rows = parts[2].cast<int64_t>();
    copyInto(sorted, buffers[1]);
    copyInto(blocks, buffers[2]);
    if (!buffers[3].null && buffers[3].data != nullptr) {
      *static_cast<int32_t*>(buffers[3].data) =
          static_cast<int32_t>(std::clamp<int64_t>(rows, INT32_MIN, INT32_MAX));
    }
  } catch (py::error_already_set& e) {
    if (e.matches(unsupported_)) {
      out.status = kUnsupported;
    } else if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
      stop_ = 1;
      out.stopped = true;
    } else {
      const std::string tag = exceptionTag(e);
      out.fault = exceptionFault(
          tag, fmt::format("the function raised {}:\n{}", tag, exceptionTraceback(e)));
    }
  } catch (const py::cast_error& e) {
    out.fault =
        exceptionFault("output", fmt::format("the dispatch wrapper did not return (sorted_slots, "
                                             "block_expert, rows): {}",
                                             e.what()));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace moe::python
