#include "moe/fuzz/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/token_text.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

std::string signatureLine(std::string_view router, std::string_view kind) {
  return fmt::format("moe-oracle: {}-{}", router, kind);
}

std::string signatureLine(std::string_view router, ViolationKind kind, std::string_view tag,
                          std::string_view shapeClass) {
  std::string name(kindName(kind));
  if (!tag.empty()) name += fmt::format("-{}", tag);
  if (!shapeClass.empty()) name += fmt::format("-on-{}", shapeClass);
  return signatureLine(router, name);
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
  if (const auto shape = degenerateShape(c); !shape.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "shape: found on {}; shrinking kept that shape, and the same fault on other "
                   "shapes is a finding of its own\n",
                   degenerateShapeText(shape));
  }
  if (v.token >= 0 && v.token < c.tokens) {
    const size_t k = static_cast<size_t>(c.k), t = static_cast<size_t>(v.token);
    const auto ids = std::span<const int32_t>(r.output.ids);
    const auto gates = std::span<const float>(r.output.gates);
    const bool whole = (t + 1) * k <= ids.size() && ids.size() == gates.size();
    fmt::format_to(
        std::back_inserter(out), "token {} of {}:\n{}", v.token, c.tokens,
        describeToken(c.row(v.token), c.family, c.k,
                      whole ? ids.subspan(t * k, k) : std::span<const int32_t>(),
                      whole ? gates.subspan(t * k, k) : std::span<const float>(), 64,
                      expertsNamed(v.certificate, c.family, static_cast<size_t>(c.experts))));
    fmt::format_to(std::back_inserter(out), "router output (ids, gates) of token {}:", v.token);
    for (size_t s = 0; s < k && v.token * k + s < r.output.ids.size(); ++s) {
      fmt::format_to(std::back_inserter(out), " ({}, {})", r.output.ids[v.token * k + s],
                     hex32(r.output.gates[v.token * k + s]));
    }
    fmt::format_to(std::back_inserter(out), "\n");
  }
  fmt::format_to(std::back_inserter(out), "case: {}\n", caseToJSON(c).dump());
  fmt::format_to(std::back_inserter(out), "{}\n",
                 signatureLine(router.name(), v.kind, v.tag, degenerateShape(c)));
  return fmt::to_string(out);
}

nlohmann::json verdictConfigJSON(const VerdictConfig& config, const Contract& contract) {
  nlohmann::json j;
  j["tie_order"] = tieOrderName(config.tieOrder.value_or(contract.tieOrder));
  j["gate_factor"] = config.gateFactor.value_or(contract.gateBudget.spec32Factor);
  j["gate_ulp"] = config.gateUlp.value_or(contract.gateBudget.ulp);
  j["analytic_floor"] = config.analyticFloor;
  j["abi"] = contract.abi;
  const nlohmann::json whole = contractJSON(contract);
  if (whole.contains("families")) j["families"] = whole["families"];
  auto& set = j["set_by_run"] = nlohmann::json::array();
  if (config.tieOrder) set.push_back("tie_order");
  if (config.gateFactor) set.push_back("gate_factor");
  if (config.gateUlp) set.push_back("gate_ulp");
  if (config.analyticFloorGiven) set.push_back("analytic_floor");
  return j;
}

std::string verdictConfigText(const nlohmann::json& v) {
  const auto& set = v.at("set_by_run");
  auto by = [&](const char* key, const char* flag) {
    return std::find(set.begin(), set.end(), key) != set.end() ? fmt::format(" ({})", flag)
                                                               : std::string();
  };
  return fmt::format("tie order {}{}, gates {} x spec32 + {} ulp{}{}, analytic floor {}{}, abi {}",
                     v.at("tie_order").get<std::string>(), by("tie_order", "--tie-order"),
                     v.at("gate_factor").get<double>(), v.at("gate_ulp").get<double>(),
                     by("gate_factor", "--gate-factor"), by("gate_ulp", "--gate-ulp"),
                     v.at("analytic_floor").get<bool>() ? "on" : "off",
                     by("analytic_floor", "--no-analytic-floor"), v.at("abi").get<std::string>());
}

VerdictConfig recordedConfig(const nlohmann::json& test, const VerdictConfig& flags,
                             std::vector<std::string>* said) {
  VerdictConfig c = flags;
  if (!test.is_object() || !test.contains("verdict_config")) return c;
  const auto& v = test["verdict_config"];
  auto bad = [](const char* what) {
    return std::invalid_argument(fmt::format("\"verdict_config\": {}", what));
  };
  if (!v.is_object()) throw bad("must be an object");
  // Said only of the knobs the run set by a flag: the others are the contract's values.
  const nlohmann::json setByRun = v.value("set_by_run", nlohmann::json::array());
  auto say = [&](const char* key, std::string line) {
    if (said && std::find(setByRun.begin(), setByRun.end(), key) != setByRun.end()) {
      said->push_back(std::move(line));
    }
  };
  if (v.contains("tie_order")) {
    if (!v["tie_order"].is_string()) throw bad("\"tie_order\" must be a string");
    const TieOrder t =
        parseTieOrder(v["tie_order"].get<std::string>(), "\"verdict_config.tie_order\"");
    if (!flags.tieOrder) {
      c.tieOrder = t;
      say("tie_order",
          fmt::format("tie order {}, as the run that found it judged (--tie-order overrides)",
                      tieOrderName(t)));
    }
  }
  auto number = [&](const char* key, std::optional<double>& out, const char* flag) {
    if (!v.contains(key)) return;
    if (!v[key].is_number() || !std::isfinite(v[key].get<double>()) || v[key].get<double>() < 0) {
      throw bad(fmt::format("\"{}\" must be a finite number >= 0", key).c_str());
    }
    if (out) return;
    out = v[key].get<double>();
    say(key, fmt::format("{} {}, as the run that found it judged ({} overrides)", key, *out, flag));
  };
  number("gate_factor", c.gateFactor, "--gate-factor");
  number("gate_ulp", c.gateUlp, "--gate-ulp");
  if (v.contains("analytic_floor")) {
    if (!v["analytic_floor"].is_boolean()) throw bad("\"analytic_floor\" must be bool");
    if (!flags.analyticFloorGiven) {
      c.analyticFloor = v["analytic_floor"].get<bool>();
      say("analytic_floor", fmt::format("analytic floor {}, as the run that found it judged",
                                        c.analyticFloor ? "on" : "off"));
    }
  }
  return c;
}

nlohmann::json reproducerFile(const Router& router, const Case& c, const CaseResult& r,
                              const nlohmann::json& provenance,
                              const nlohmann::json& verdictConfig) {
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
  test["verdict_config"] = verdictConfig;
  test["token"] = v.token;
  test["ids"] = r.output.ids;
  auto& gates = test["gates"] = nlohmann::json::array();
  for (float g : r.output.gates) gates.push_back(hex32(g));
  test["verdict"] = "violation";
  test["kind"] = std::string(kindName(v.kind));
  test["signature"] = signatureLine(router.name(), v.kind, v.tag, degenerateShape(c));
  test["certificate"] = v.certificate;
  nlohmann::json file;
  file["algorithm"] = "moe-topk-routing";
  file["schema"] = "moe_vectors_v1.schema.json";
  file["formatVersion"] = kVectorFormatVersion;
  file["generatorVersion"] = std::string("moe-oracle ") + MOE_ORACLE_VERSION;
  file["provenance"] = provenance;
  file["header"] = {"A violation found by moe-oracle fuzz; replay with `moe-oracle replay`."};
  file["notes"] = {
      {std::string(kindName(v.kind)), "the violation kind the verdict reported (docs/fuzz.md)"}};
  file["numberOfTests"] = 1;
  file["testGroups"] = {{{"type", "RouterReproducer"}, {"tests", {test}}}};
  return file;
}

}  // namespace moe::fuzz
