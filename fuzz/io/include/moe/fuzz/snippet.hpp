// A finding ready to send upstream: each RouterReproducer test of a reproducer file told as a
// self-contained program a kernel author can paste into a bug report (`moe-oracle explain
// --as python|c`, JudgeResult.to_python() / to_c()). It holds the case's logits as exact
// hex floats, the routing family's parameters, k, the router's recorded ids and gates, the
// spec's answer for the offending token (the oracle's kept experts in order and their exact
// gates, correctly rounded to binary32, with the exact intervals) and the certificate, and
// it prints the router's answer beside the spec's when run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moe::fuzz {

// "python": runnable with torch alone (`import torch`), ending in an assert that fails on
// the router's answer. "c": C99 (math.h, stdint.h, stdio.h; the v2 struct from
// moe/route_abi.h when the case has a family) whose main prints both answers and returns 1
// when they differ. One snippet per RouterReproducer test; other test types are skipped. A
// dispatch reproducer (DispatchReproducer) is told by dispatchSnippet (dispatch_snippet.hpp).
// Throws std::invalid_argument on a language other than those two, a malformed file, a
// RouterReproducer test it cannot read, or a file without any RouterReproducer test.
std::string reproducerSnippet(const nlohmann::json& file, std::string_view language);

// A binary32 spelled exactly: "float.fromhex('0x1.8p+1')", "float('inf')", "float('nan')"
// (Python); "0x1.8p+1f", "INFINITY", "NAN" (C, math.h). The sign and payload of a NaN are
// lost in both spellings; the Python snippet restores them bit for bit after building.
std::string pythonFloat(float x);
std::string cFloat(float x);

}  // namespace moe::fuzz
