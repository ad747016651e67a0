// One report format and one stable signature line: the report is built only on failure,
// printed once, and ends in
//   moe-oracle: <router>-<kind>
// so crashes and campaign findings deduplicate on that line. The shape is not in it: one
// bug found on eight seeds at eight shapes is one signature.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

std::string signatureLine(std::string_view router, std::string_view kind);
// `tag` (a crash's signal, an exception's type, "ids" or "gates" for a stray write) is added
// when not empty: only what tells two bugs of one kind apart. The shape never is, but for
// its degenerate class (degenerateShape: "empty-batch", "no-experts", "k-zero"), added as
// "-on-<class>", so that a fault only an empty batch shows is its own finding.
std::string signatureLine(std::string_view router, ViolationKind kind, std::string_view tag = {},
                          std::string_view shapeClass = {});
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

// The verdict configuration in force for a router: each knob's effective value (the run's
// flag where one was given, else the contract's) and "set_by_run" naming the knobs a flag
// set; the ABI and the families drawn (`contract` is the effective one: --family applied).
// Recorded in reproducers ("verdict_config"), printed in the run header and in --json.
nlohmann::json verdictConfigJSON(const VerdictConfig& config, const Contract& contract);
// One line for a person: "tie order any (--tie-order), gates 2 x spec32 + 4 ulp
// (contract), analytic floor on".
std::string verdictConfigText(const nlohmann::json& verdictConfig);
// The configuration a reproducer is judged by: the run's flags where given (`flags`), else
// the values its "verdict_config" recorded, else the contract's. Appends to `said` one line
// per recorded value used, so that replay and explain say what they judge by. Throws
// std::invalid_argument on a malformed "verdict_config".
VerdictConfig recordedConfig(const nlohmann::json& test, const VerdictConfig& flags,
                             std::vector<std::string>* said);

// A golden-vector file (Wycheproof layout) holding one RouterReproducer test, with the
// verdict configuration it was found under.
nlohmann::json reproducerFile(const Router& router, const Case& c, const CaseResult& result,
                              const nlohmann::json& provenance,
                              const nlohmann::json& verdictConfig);

}  // namespace moe::fuzz
