// The parts of the extension module moe_oracle._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

#include "moe/fuzz/verdict.hpp"

namespace moe::python {

// The verdict's knobs from keyword arguments tie_order, gate_factor, gate_ulp and
// analytic_floor (absent or None: the contract's value, or the default), as the command's
// --tie-order, --gate-factor, --gate-ulp and --no-analytic-floor.
fuzz::VerdictConfig makeVerdictConfig(const pybind11::kwargs& knobs);

void bindJudge(pybind11::module_& m);  // judge, Verdict
void bindFuzz(pybind11::module_& m);   // fuzz
void bindCases(pybind11::module_& m);  // draw_case, for moe_oracle.strategies
void bindLayer(pybind11::module_& m);  // judge_layer, fuzz_layer, draw_layer_case

}  // namespace moe::python
