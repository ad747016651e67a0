#include "moe/fuzz/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/token_text.hpp"

namespace moe::fuzz {

std::string signatureLine(std::string_view router, std::string_view kind) {
  return fmt::format("moe-oracle: {}-{}", router, kind);
}

std::string signatureLine(std::string_view router, ViolationKind kind, std::string_view tag) {
  if (tag.empty()) return signatureLine(router, kindName(kind));
  return fmt::format("moe-oracle: {}-{}-{}", router, kindName(kind), tag);
}

std::string safeFileStem(std::string stem) {
  for (char& ch : stem) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) ch = '_';
  }
  return stem;
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

std::string mismatchReport(const Router& router, const Case& c, const CaseResult& r) {
  fmt::memory_buffer out;
  const Verdict& v = *r.violation;
  fmt::format_to(std::back_inserter(out), "=== moe-oracle violation: {} ===\n", kindName(v.kind));
  fmt::format_to(std::back_inserter(out), "router: {}\ncontract: {}\ncpu flags: {}\n",
                 router.name(), contractToJSON(router.contract()), cpuFlags());
  fmt::format_to(std::back_inserter(out), "certificate: {}\n", v.certificate);
  if (v.token >= 0 && v.token < c.tokens) {
    const size_t k = static_cast<size_t>(c.k), t = static_cast<size_t>(v.token);
    const auto ids = std::span<const int32_t>(r.output.ids);
    const auto gates = std::span<const float>(r.output.gates);
    const bool whole = (t + 1) * k <= ids.size() && ids.size() == gates.size();
    fmt::format_to(std::back_inserter(out), "token {} of {}:\n{}", v.token, c.tokens,
                   describeToken(c.row(v.token), c.family, c.k,
                                 whole ? ids.subspan(t * k, k) : std::span<const int32_t>(),
                                 whole ? gates.subspan(t * k, k) : std::span<const float>(), 64));
    fmt::format_to(std::back_inserter(out), "router output (ids, gates) of token {}:", v.token);
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
  test["contract"] = contractJSON(router.contract());
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
