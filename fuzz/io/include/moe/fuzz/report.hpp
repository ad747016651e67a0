// One report format and one stable signature line: the report is built only on failure,
// printed once, and ends in
//   moe-oracle: <router>-<kind>
// so crashes and campaign findings deduplicate on that line. The shape is not in it: one
// bug found on eight seeds at eight shapes is one signature (issue 12).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

std::string signatureLine(std::string_view router, std::string_view kind);
// `tag` (a crash's signal, "ids" or "gates" for a stray write) is added when not empty:
// only what tells two bugs of one kind apart, never the shape.
std::string signatureLine(std::string_view router, ViolationKind kind, std::string_view tag = {});
// A reproducer's file stem from a router name and a signature: every character other than a
// letter, a digit, '-' or '_' becomes '_', so that a library path given as --impl
// ("./lib/libmine.so") names a file inside --out, not a path elsewhere.
std::string safeFileStem(std::string stem);
// The x86 feature flags that pick SIMD paths (from /proc/cpuinfo), for reproduction.
std::string cpuFlags();

// Everything needed to reproduce a violation: the case JSON, the router's output, the
// offending token's logits in decimal and hex with rank and kept status, exact vs actual
// gates, the margin at the kept boundary, CPU flags; the last line is the signature.
std::string mismatchReport(const Router& router, const Case& c, const CaseResult& result);

// A golden-vector file (Wycheproof layout) holding one RouterReproducer test.
nlohmann::json reproducerFile(const Router& router, const Case& c, const CaseResult& result,
                              const nlohmann::json& provenance);

}  // namespace moe::fuzz
