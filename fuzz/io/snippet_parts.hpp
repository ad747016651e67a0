// What the three doors' snippet writers (snippet.cpp, dispatch_snippet.cpp,
// layer_snippet.cpp) share: the findings of a reproducer file, read one test at a time,
// several self-contained Python snippets laid one after another, the C program's findings
// and main, and the text a program says of a certificate and of the statuses due.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/fuzz/dispatch_verdict.hpp"

namespace moe::fuzz {

// Every test of the file's groups of `type` ("RouterReproducer", ...) read by `read`, a
// test that cannot be read named by its tcId; throws when there is none.
template <class Read>
auto snippetFindings(const nlohmann::json& file, const std::string& type, Read read) {
  std::vector<decltype(read(file))> findings;
  for (const auto& g : file.at("testGroups")) {
    if (g.value("type", "") != type) continue;
    for (const auto& t : g.at("tests")) {
      try {
        findings.push_back(read(t));
      } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(
            fmt::format("tcId {}: {}", t.value("tcId", int64_t{0}), e.what()));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(
            fmt::format("tcId {}: {}", t.value("tcId", int64_t{0}), e.what()));
      }
    }
  }
  if (findings.empty()) {
    throw std::invalid_argument(fmt::format("no {} test: nothing to write a snippet for", type));
  }
  return findings;
}

// The C names' suffixes of n findings: "_1", "_2", ..., or "" for one.
inline std::vector<std::string> snippetSuffixes(size_t n) {
  std::vector<std::string> suffixes;
  for (size_t i = 0; i < n; ++i) suffixes.push_back(n > 1 ? fmt::format("_{}", i + 1) : "");
  return suffixes;
}

// The Python snippets, each written by `write(out, finding)` and, when there are several,
// headed by its number: each runs on its own.
template <class Finding, class Write>
std::string pythonSnippets(const std::vector<Finding>& findings, Write write) {
  fmt::memory_buffer out;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings.size() > 1) {
      fmt::format_to(std::back_inserter(out),
                     "{}# ---- snippet {} of {}: self-contained, runs on its own ----\n",
                     i > 0 ? "\n\n" : "", i + 1, findings.size());
    }
    write(out, findings[i]);
  }
  return fmt::to_string(out);
}

// The C findings, one function each (finding, finding_1, ...: snippetSuffixes) written by
// `write(out, finding, suffix)` and returning 1 when it reproduces, then a main that calls
// them all and returns 1 when one does.
template <class Finding, class Write>
void cFindingsAndMain(fmt::memory_buffer& out, const std::vector<Finding>& findings, Write write) {
  const std::vector<std::string> suffixes = snippetSuffixes(findings.size());
  auto to = std::back_inserter(out);
  for (size_t i = 0; i < findings.size(); ++i) {
    fmt::format_to(to, "\n");
    write(out, findings[i], suffixes[i]);
  }
  fmt::format_to(to, "\nint main(void) {{\n  int found = 0;\n");
  for (const auto& s : suffixes) fmt::format_to(to, "  found |= finding{}();\n", s);
  fmt::format_to(to, "  return found;\n}}\n");
}

// `text` as comment lines, each headed by `prefix` (a certificate may hold several lines).
std::string commented(const std::string& text, const char* prefix);

// The C condition that `status` is none of the due statuses: "status != 6 && status != 3".
std::string noneOfDue(const std::vector<DueStatus>& due);

}  // namespace moe::fuzz
