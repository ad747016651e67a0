// What the dispatch and layer doors do alike with a violation: keep one finding per kind
// and tag, write it as a one-test reproducer file, and later replay or explain that file's
// tests. Each door passes its own parts (its case, verdict, report and kernel) as callables.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moe/fuzz/report.hpp"
#include "moe/fuzz/run_loop.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

// What a door's reproducer files share but for its words: the file's algorithm, its header
// and its one group's type.
struct DoorFile {
  const char* algorithm;
  const char* header;
  const char* group;
};

// A reproducer file of one test: the envelope (algorithm, version, header, notes,
// provenance, schema) around one group of one test, which holds the fields every door
// writes (the verdict, the kernel) and the door's own `fields` (its case, its output).
nlohmann::json doorReproducerFile(const DoorFile& door, ViolationKind kind, const std::string& tag,
                                  const std::string& certificate, const std::string& impl,
                                  const nlohmann::json& provenance, const nlohmann::json& fields);

// Writes a finding's reproducer under the run's --out (provenance: the run's seed, the
// kernel, the ABI) and returns its path.
std::string writeDoorReproducer(
    const RunOptions& o, const std::string& impl, const char* abi, ViolationKind kind,
    const std::string& tag,
    const std::function<nlohmann::json(const nlohmann::json& provenance)>& file);

// A shrunk finding described: its kind and tag, signature, report, counted once.
template <class Finding>
void describeFinding(Finding& f, const std::string& impl, ViolationKind kind,
                     const std::string& tag, std::string report) {
  f.kind = kind;
  f.tag = tag;
  f.signature = signatureLine(impl, kind, tag);
  f.report = std::move(report);
  f.count = 1;
}

// Folds a case's violation into the findings, one per kind and tag. A new one is shrunk and
// described (`shrunk`), written (`write`) and kept. A known one is counted; when `smaller`
// says the case is smaller than the kept one, before and again after shrinking, it replaces
// it, keeping the count and the first draw, so the kept reproducer is the smallest shrunk.
template <class Finding, class Smaller, class Shrunk, class Write>
void keepFinding(std::vector<Finding>& findings, ViolationKind kind, const std::string& tag,
                 Smaller smaller, Shrunk shrunk, Write write) {
  auto same = std::find_if(findings.begin(), findings.end(),
                           [&](const Finding& f) { return f.kind == kind && f.tag == tag; });
  const bool known = same != findings.end();
  if (known) {
    ++same->count;
    if (!smaller(*same)) return;
  }
  Finding f = shrunk();
  if (known) {
    if (!smaller(*same)) return;
    f.count = same->count;
    f.drawn = same->drawn;
  }
  write(f);
  if (known) {
    *same = std::move(f);
  } else {
    findings.push_back(std::move(f));
  }
}

// What a replayed test came to when it failed: the verdict now (or the kind the kernel
// still violates with) and its certificate.
struct DoorRecheck {
  std::string now, certificate;
};

// Replays each test of the groups of type `group` (others are skipped, said as not a `door`
// group): a test that cannot be read (`read` throws) is malformed; `rejudge` says when the
// recorded output is no longer judged its recorded kind; with `impl`, `rerun` says when the
// kernel still violates on the case.
template <class Impl, class Read, class Rejudge, class Rerun>
ReplaySummary replayDoorGroups(const nlohmann::json& file, const char* group, const char* door,
                               const Impl* impl, Read read, Rejudge rejudge, Rerun rerun) {
  ReplaySummary out;
  for (const auto& g : file["testGroups"]) {
    if (g["type"] != group) {
      out.skipped += static_cast<int>(g["tests"].size());
      out.lines.push_back(fmt::format("group {} skipped: not a {} group", g["type"].dump(), door));
      continue;
    }
    for (const auto& t : g["tests"]) {
      const int64_t tcId = t.value("tcId", int64_t{0});
      std::optional<decltype(read(t))> r;
      try {
        r.emplace(read(t));
      } catch (const std::exception& e) {
        ++out.failed;
        ++out.malformed;
        out.failures.push_back({tcId, "error", e.what()});
        out.lines.push_back(fmt::format("{} tcId {}: malformed test: {}", group, tcId, e.what()));
        continue;
      }
      if (const std::optional<DoorRecheck> m = rejudge(*r)) {
        ++out.failed;
        out.failures.push_back({tcId, "mismatch", m->certificate});
        out.lines.push_back(fmt::format("{} tcId {}: recorded output was {} and is now judged {}",
                                        group, tcId, r->kind, m->now));
        continue;
      }
      if (impl) {
        if (const std::optional<DoorRecheck> v = rerun(*impl, *r)) {
          ++out.failed;
          out.failures.push_back({tcId, v->now, v->certificate});
          out.lines.push_back(fmt::format("{} tcId {}: {} still violates: {}: {}", group, tcId,
                                          impl->name(), v->now, v->certificate));
          continue;
        }
      }
      ++out.passed;
    }
  }
  return out;
}

// Tells each test of the groups of type `group` (`tell` appends to the text); a test that
// cannot be read is said so and counted in `unexplained`.
template <class Tell>
std::string explainDoorGroups(const nlohmann::json& file, const char* group, int* unexplained,
                              Tell tell) {
  std::string text;
  for (const auto& g : file["testGroups"]) {
    if (g["type"] != group) continue;
    for (const auto& t : g["tests"]) {
      const int64_t tcId = t.value("tcId", int64_t{0});
      try {
        tell(t, tcId, text);
      } catch (const std::exception& e) {
        text += fmt::format("--- {} tcId {}: cannot be read: {}\n", group, tcId, e.what());
        if (unexplained) ++*unexplained;
      }
    }
  }
  return text;
}

}  // namespace moe::fuzz
