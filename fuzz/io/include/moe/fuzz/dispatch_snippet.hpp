// A dispatch finding ready to send upstream (`moe-oracle explain --as python|c` on a
// DispatchReproducer file, FuzzReport.to_python() / to_c() of fuzz_dispatch): the case, the
// spec's answer and the recorded one, as a program that calls the user's dispatcher on the
// case.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moe::fuzz {

// "python": runnable with NumPy alone; it checks the recorded answer, or, once `dispatch`
// in it is set to the user's function, that function's answer on the case, and ends in an
// assert that fails when it differs from the spec's (each expert's list compared as a set
// when the contract's within_expert_order is "any"). Cases inside the domain only (a status
// finding has no Python spelling: it throws, naming --as c). "c": C99 calling
// moe_dispatch_v1 (built with the user's library and layer_abi.h) on the case, max_rows and
// NULL buffers included; main prints its answer beside the spec's (or its status beside the
// statuses due) and returns 1 when they differ. Throws std::invalid_argument on a language
// other than those two or a test it cannot read.
std::string dispatchSnippet(const nlohmann::json& file, std::string_view language);

}  // namespace moe::fuzz
