// A Python exception told in a finding: its type as a signature tag and its traceback as
// the user would see it in a terminal.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace moe::python {

// The exception's type name, made fit for a signature line ("ValueError", "my_Error").
std::string exceptionTag(const pybind11::error_already_set& e);

// Python's own rendering of the exception and its traceback (traceback.format_exception).
// The outermost frame is the package's wrapper, the same in every finding: it is left out
// when the exception came from deeper, from the user's function.
std::string exceptionTraceback(const pybind11::error_already_set& e);

}  // namespace moe::python
