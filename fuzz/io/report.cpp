#include "moe/fuzz/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "moe/fuzz/float_bits.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/routing.hpp"

namespace moe::fuzz {

std::string signatureLine(std::string_view router, std::string_view kind) {
  return fmt::format("moe-oracle: {}-{}", router, kind);
}

std::string signatureLine(std::string_view router, ViolationKind kind, std::string_view tag) {
  if (tag.empty()) return signatureLine(router, kindName(kind));
  return fmt::format("moe-oracle: {}-{}-{}", router, kindName(kind), tag);
}

std::string cpuFlags() {
  static const char* kInteresting[] = {"sse4_2",   "avx",        "avx2",     "fma",
                                       "f16c",     "avx512f",    "avx512bw", "avx512dq",
                                       "avx512vl", "avx512_bf16"};
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w, out;
    std::vector<std::string> have;
    while (words >> w) have.push_back(w);
    for (const char* f : kInteresting) {
      if (std::find(have.begin(), have.end(), f) != have.end()) out += std::string(f) + " ";
    }
    return out.empty() ? "(none of the SIMD flags)" : out;
  }
  return "(unknown: no /proc/cpuinfo)";
}

namespace {

void describeToken(fmt::memory_buffer& out, const Case& c, const CaseResult& r, int32_t t) {
  const auto x = c.row(t);
  const size_t k = static_cast<size_t>(c.k);
  const int32_t E = c.experts;
  std::vector<size_t> rank(x.size(), 0);
  bool nan = std::any_of(x.begin(), x.end(), [](float v) { return std::isnan(v); });
  if (!nan) rank = oracle::ranks(x);
  const size_t n = std::min<size_t>(k, x.size());
  fmt::format_to(std::back_inserter(out), "token {} (E = {}, k = {}):\n", t, E, c.k);
  fmt::format_to(std::back_inserter(out), "  {:>5} {:>16} {:>12} {:>5} {:>9} {:>10}\n", "expert",
                 "logit", "hex", "rank", "spec", "router");
  std::vector<int> slotOf(x.size(), -1);
  for (size_t s = 0; s < k && t * k + s < r.output.ids.size(); ++s) {
    int32_t id = r.output.ids[t * k + s];
    if (id >= 0 && id < E) slotOf[id] = static_cast<int>(s);
  }
  const size_t shown = std::min<size_t>(x.size(), 64);
  for (size_t e = 0; e < shown; ++e) {
    fmt::format_to(std::back_inserter(out), "  {:>5} {:>16} {:>12} {:>5} {:>9} {:>10}\n", e,
                   decimal32(x[e]), hex32(x[e]),
                   nan ? std::string("-") : fmt::format("{}", rank[e]),
                   nan ? "-" : (rank[e] < n ? "kept" : "displaced"),
                   slotOf[e] >= 0 ? fmt::format("slot {}", slotOf[e]) : std::string("-"));
  }
  if (shown < x.size()) {
    fmt::format_to(std::back_inserter(out), "  ... {} more experts in the case JSON\n",
                   x.size() - shown);
  }
  // Exact vs actual gates of the router's kept set, and the margin at the kept boundary.
  std::vector<size_t> S;
  for (size_t s = 0; s < n && t * k + s < r.output.ids.size(); ++s) {
    int32_t id = r.output.ids[t * k + s];
    if (id < 0 || id >= E || std::find(S.begin(), S.end(), size_t(id)) != S.end()) {
      S.clear();
      break;
    }
    S.push_back(static_cast<size_t>(id));
  }
  if (isRealRow(x) && !S.empty()) {
    try {
      auto exact = oracle::certified::keptGatesEnclosure(x, S);
      fmt::format_to(std::back_inserter(out), "  gates of the router's kept set:\n");
      for (size_t s = 0; s < S.size(); ++s) {
        float g = r.output.gates[t * k + s];
        fmt::format_to(std::back_inserter(out),
                       "    slot {} expert {}: router {} ({}), exact in [{:.17g}, {:.17g}], "
                       "correctly rounded {}\n",
                       s, S[s], decimal32(g), hex32(g), exact[s].range.lowerDouble(),
                       exact[s].range.upperDouble(), hex32(exact[s].f32));
      }
    } catch (const std::exception& e) {
      fmt::format_to(std::back_inserter(out), "  (no exact gates: {})\n", e.what());
    }
  }
  if (!nan && n > 0 && n < x.size()) {
    size_t lastKept = 0, firstOut = 0;
    for (size_t e = 0; e < x.size(); ++e) {
      if (rank[e] == n - 1) lastKept = e;
      if (rank[e] == n) firstOut = e;
    }
    fmt::format_to(std::back_inserter(out),
                   "  spec's kept boundary: expert {} (rank {}) vs expert {} (rank {}): logit "
                   "margin {:.9g}\n",
                   lastKept, n - 1, firstOut, n,
                   static_cast<double>(x[lastKept]) - static_cast<double>(x[firstOut]));
  }
}

}  // namespace

std::string mismatchReport(const Router& router, const Case& c, const CaseResult& r) {
  fmt::memory_buffer out;
  const Verdict& v = *r.violation;
  fmt::format_to(std::back_inserter(out), "=== moe-oracle violation: {} ===\n", kindName(v.kind));
  fmt::format_to(std::back_inserter(out), "router: {}\ncontract: {}\ncpu flags: {}\n",
                 router.name(), contractToJSON(router.contract()), cpuFlags());
  fmt::format_to(std::back_inserter(out), "certificate: {}\n", v.certificate);
  if (v.token >= 0 && v.token < c.tokens) {
    describeToken(out, c, r, v.token);
    fmt::format_to(std::back_inserter(out), "  router output (ids, gates) of token {}:", v.token);
    const size_t k = static_cast<size_t>(c.k);
    for (size_t s = 0; s < k && v.token * k + s < r.output.ids.size(); ++s) {
      fmt::format_to(std::back_inserter(out), " ({}, {})", r.output.ids[v.token * k + s],
                     hex32(r.output.gates[v.token * k + s]));
    }
    fmt::format_to(std::back_inserter(out), "\n");
  }
  fmt::format_to(std::back_inserter(out), "case: {}\n", caseToJSON(c).dump());
  fmt::format_to(std::back_inserter(out), "{}\n", signatureLine(router.name(), v.kind, v.tag));
  return fmt::to_string(out);
}

nlohmann::json reproducerFile(const Router& router, const Case& c, const CaseResult& r,
                              const nlohmann::json& provenance) {
  const Verdict& v = *r.violation;
  // The case exactly as the case model writes it (variant included, so a batch-variance
  // finding replays the rerun that found it), then the router's output and the verdict.
  nlohmann::json test = caseToJSON(c);
  test["tcId"] = 1;
  test["comment"] = v.certificate;
  test["flags"] = {std::string(kindName(v.kind))};
  test["result"] = "invalid";
  test["impl"] = router.name();
  test["contract"] = nlohmann::json::parse(contractToJSON(router.contract()));
  test["token"] = v.token;
  test["ids"] = r.output.ids;
  auto& gates = test["gates"] = nlohmann::json::array();
  for (float g : r.output.gates) gates.push_back(hex32(g));
  test["verdict"] = "violation";
  test["kind"] = std::string(kindName(v.kind));
  test["signature"] = signatureLine(router.name(), v.kind, v.tag);
  test["certificate"] = v.certificate;
  nlohmann::json file;
  file["algorithm"] = "moe-topk-routing";
  file["schema"] = "moe_vectors_v1.schema.json";
  file["generatorVersion"] = "moe-oracle fuzz 0.1.0";
  file["provenance"] = provenance;
  file["header"] = {"A violation found by moe-oracle fuzz; replay with `moe-oracle replay`."};
  file["notes"] = {
      {std::string(kindName(v.kind)), "the violation kind the verdict reported (docs/fuzz.md)"}};
  file["numberOfTests"] = 1;
  file["testGroups"] = {{{"type", "RouterReproducer"}, {"tests", {test}}}};
  return file;
}

}  // namespace moe::fuzz
