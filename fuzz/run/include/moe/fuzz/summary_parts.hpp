// The pieces every door's summary (router, moe_dispatch_v1, moe_layer_v1) is made of, so that
// a finding reads and a run ends the same in each: a finding's JSON entry, counts by band or
// reason, and the closing lines (insufficient coverage, interrupted).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// One entry of the summary's "violations": signature, kind, tag, count, reproducer, shape.
nlohmann::json findingJSON(const std::string& signature, ViolationKind kind, const std::string& tag,
                           uint64_t count, const std::string& reproducer, nlohmann::json shape);

// Counts as a JSON object ({} when there are none) and as text (" name:count" each).
nlohmann::json countsJSON(const std::map<std::string, uint64_t>& counts);
std::string countsText(const std::map<std::string, uint64_t>& counts);

// A kernel door's line for one finding: kind, signature, count, the smallest reproducer and
// its shape, the shape it was drawn at.
std::string findingLine(ViolationKind kind, const std::string& signature, uint64_t count,
                        const std::string& reproducer, const std::string& smallest,
                        const std::string& drawn);
// A kernel door's closing lines: insufficient coverage (only without a finding), interrupted.
std::string closingLines(bool anyFinding, bool insufficient, uint64_t tokens, uint64_t minTokens,
                         uint64_t abstained, uint64_t cases, bool interrupted);

// The line that says a run without a finding judged too little (exit 3).
std::string insufficientCoverageLine(uint64_t tokens, uint64_t minTokens, uint64_t abstained,
                                     uint64_t cases);
// The line that says a signal ended the run ("" when none did).
std::string interruptedLine(bool interrupted);

}  // namespace moe::fuzz
