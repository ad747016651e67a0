// What the dispatch and layer doors' runs hand back alike: a finding (one distinct violation)
// and the summary's common fields; each door's summary adds what it counts of its own.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// One distinct violation (kind and tag), its count and its smallest shrunk reproducer.
// `Shape` is how the door keeps the case it was drawn as and shrunk to (the case itself,
// or its shape as text).
template <class Shape>
struct DoorFinding {
  ViolationKind kind = ViolationKind::kNone;
  std::string tag, signature, reproducer, report;
  uint64_t count = 0;
  Shape smallest, drawn;
};

template <class Finding>
struct DoorSummary {
  std::string impl;
  uint64_t seed = 0;
  double seconds = 0;
  uint64_t cases = 0, passed = 0, abstained = 0, violationCases = 0;
  uint64_t tokens = 0;  // tokens judged
  std::map<std::string, uint64_t> abstainReasons;
  std::vector<Finding> findings;
  uint64_t minTokens = 0;
  bool interrupted = false;
  nlohmann::json contract;
  // Fewer tokens judged than asked, or more than half the cases abstained.
  bool insufficientCoverage() const { return tokens < minTokens || abstained * 2 > cases; }
  // 0 clean, 1 a violation, 3 insufficient coverage (docs/fuzz.md "Exit codes").
  int exitCode() const { return !findings.empty() ? 1 : insufficientCoverage() ? 3 : 0; }
};

}  // namespace moe::fuzz
