// What the three doors' snippet writers (snippet.cpp, dispatch_snippet.cpp,
// layer_snippet.cpp) share: the findings of a reproducer file, read one test at a time, and
// several self-contained Python snippets laid one after another.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

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

}  // namespace moe::fuzz
