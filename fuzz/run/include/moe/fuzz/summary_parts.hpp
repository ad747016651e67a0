// The pieces every door's summary (router, moe_dispatch_v1, moe_layer_v1) is made of, so that
// a finding reads and a run ends the same in each: a finding's JSON entry, counts by band or
// reason, and the closing lines (insufficient coverage, interrupted).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// What every door's summary JSON holds alike: impl, seed, seconds, cases, tokens, abstained,
// violation_cases, interrupted, and its coverage's min_tokens and insufficient.
template <class Summary>
nlohmann::json summaryHeadJSON(const Summary& s) {
  nlohmann::json head = {{"impl", s.impl}, {"seed", s.seed}, {"seconds", s.seconds}};
  head.update({{"cases", s.cases}, {"tokens", s.tokens}, {"abstained", s.abstained}});
  head["violation_cases"] = s.violationCases;
  head["interrupted"] = s.interrupted;
  head["coverage"] = {{"min_tokens", s.minTokens}, {"insufficient", s.insufficientCoverage()}};
  return head;
}

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

// A kernel door's summary text after its coverage: the cases abstained by reason, a line per
// finding (its smallest and drawn shapes told by `shape`), the closing lines.
template <class Summary, class Shape>
std::string doorSummaryEnd(const Summary& s, Shape shape) {
  std::string out;
  if (s.abstained > 0) {
    out += fmt::format("abstained (not judged):{}\n", countsText(s.abstainReasons));
  }
  for (const auto& f : s.findings) {
    out +=
        findingLine(f.kind, f.signature, f.count, f.reproducer, shape(f.smallest), shape(f.drawn));
  }
  return out + closingLines(!s.findings.empty(), s.insufficientCoverage(), s.tokens, s.minTokens,
                            s.abstained, s.cases, s.interrupted);
}

// The line that says a run without a finding judged too little (exit 3).
std::string insufficientCoverageLine(uint64_t tokens, uint64_t minTokens, uint64_t abstained,
                                     uint64_t cases);
// The line that says a signal ended the run ("" when none did).
std::string interruptedLine(bool interrupted);

}  // namespace moe::fuzz
