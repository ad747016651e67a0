// Shared by the libFuzzer targets: how a target reports a finding. A violation prints the
// one report (ending in the stable signature line) and aborts, so libFuzzer records a
// crash and deduplicates on that line; refusals and abstentions are not findings.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// True in a target whose inputs are not in the decoder's byte layout: fuzz_external on a
// moe_route_v2 library reads them as the stream the family's draw consumes (routerCase).
// The custom mutator then leaves them to libFuzzer's byte mutator: decoding them as a v1
// case and encoding that again would not keep the family case's structure, only replace it.
inline bool gFamilyStreamInput = false;

[[noreturn]] inline void reportAndAbort(const std::string& report) {
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

// A finding outside the router verdict (dense != sparse, capacity mismatch, ...).
[[noreturn]] inline void propertyFailure(const std::string& target, const std::string& kind,
                                         const Case& c, const std::string& details) {
  reportAndAbort(fmt::format("=== moe-oracle {} property failure: {} ===\n{}\ncase: {}\n{}\n",
                             target, kind, details, caseToJSON(c).dump(),
                             signatureLine(target, kind)));
}

}  // namespace moe::fuzz
