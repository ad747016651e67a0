// The dispatch door's part of the extension module moe_oracle._core (dispatch_binding.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace moe::python {

void bindDispatch(pybind11::module_& m);  // fuzz_dispatch, judge_dispatch

}  // namespace moe::python
