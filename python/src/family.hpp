// The routing family's parameters (moe_route_params_v2, fuzz::Family) between Python and
// C++. The package's Python side (moe_oracle/_family.py) reads the user's dict and hands the
// extension a plain tuple of the raw values, in route_abi.h's order:
//   (score, bias float32 [E] or None, groups, topk_groups, group_score, renormalize, scale,
//    struct_short)
// and the fuzzer hands the function's wrapper the same tuple for each case it draws, so the
// dict is read and written in one place (Python) and the Family built in one place (here).
#pragma once

#include <pybind11/pybind11.h>

#include "moe/fuzz/case.hpp"

namespace moe::python {

// The Family of a tuple as above. Throws std::invalid_argument (ValueError) on a tuple of
// another length or a bias that is not 1-D (a bias of another length than `experts` is
// kept: familyInvalidReason names it).
fuzz::Family familyFromTuple(const pybind11::handle& raw, int32_t experts);
// The tuple of a Family, the bias as a fresh float32 array (None when there is none).
pybind11::tuple familyToTuple(const fuzz::Family& f);

void bindFamily(pybind11::module_& m);  // family_check

}  // namespace moe::python
