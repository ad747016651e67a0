// A fused-layer finding ready to send upstream (`moe-oracle explain --as python|c` on a
// LayerReproducer file): the case and what the verdict accepts for the offending token, as a
// program that calls the user's layer on the case.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moe::fuzz {

// "c": C99 calling moe_layer_v1 (built with the user's library and layer_abi.h) on the
// case, with the bad call's parameters when the finding is a status one; main returns 1
// when the finding reproduces: a y of the offending token that fits none of the routings
// the verdict accepts (each one's spec sparse forward and budget, written into the
// program), or, when the finding's routing was returned and the layer returns it again, a
// y outside that routing's exact-gate budget; a status other than those due, or outputs
// written on an error. A crash or a hang reproduces by the program crashing or hanging. "python":
// runnable with NumPy alone; it checks the recorded y, or, once `layer` in it is set to the user's
// function (fn(x, logits, w13, w2, k, family) -> y or (y, ids, gates), as fuzz_layer calls it),
// that function's y, and ends in an assert that fails when the finding reproduces. Calls inside the
// domain only for Python (a status finding throws, naming --as c). Throws std::invalid_argument on
// another language or a test it cannot read.
std::string layerSnippet(const nlohmann::json& file, std::string_view language);

}  // namespace moe::fuzz
