#include "moe/fuzz/contract.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "contract_schema.hpp"  // generated from docs/contract.schema.json

namespace moe::fuzz {

namespace {

std::invalid_argument contractError(std::string_view what) {
  return std::invalid_argument(fmt::format("router contract: {}", what));
}

// The contract's JSON Schema, compiled in: the known keys, the enums and the limits below
// come from it, so the documented schema and the parser cannot drift apart.
const nlohmann::json& schema() {
  static const nlohmann::json s = nlohmann::json::parse(kContractSchema);
  return s;
}

const nlohmann::json& property(std::string_view path) {
  const nlohmann::json* node = &schema();
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    node = &node->at("properties").at(std::string(path.substr(start, dot - start)));
    start = dot + 1;
  }
  return *node;
}

// Levenshtein distance, for "did you mean": keys are short, so the O(nm) table is fine.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// An unknown key (a typo such as "slot-order" used to be ignored, and the run fell back to
// weaker checks) is an error naming the nearest key the schema knows at that level.
void rejectUnknownKeys(const nlohmann::json& j, const nlohmann::json& level,
                       std::string_view prefix) {
  const auto& known = level.at("properties");
  for (const auto& [key, value] : j.items()) {
    if (known.contains(key)) continue;
    std::string best;
    for (const auto& [k, v] : known.items()) {
      if (best.empty() || editDistance(key, k) < editDistance(key, best)) best = k;
    }
    throw contractError(
        fmt::format("unknown key \"{}{}\" (did you mean \"{}{}\"?)", prefix, key, prefix, best));
  }
}

// A number within the schema's minimum and maximum for that property.
double boundedNumber(const nlohmann::json& j, std::string_view path) {
  const auto& p = property(path);
  if (!j.is_number()) throw contractError(fmt::format("\"{}\" must be a number", path));
  const double v = j.get<double>();
  const double lo = p.value("minimum", -HUGE_VAL), hi = p.value("maximum", HUGE_VAL);
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw contractError(
        fmt::format("\"{}\" = {} is outside {} to {} ({})", path, v, lo, hi,
                    p.value("description", std::string("docs/contract.schema.json"))));
  }
  return v;
}

// One of the schema's enum values for that property (the first is the default).
std::string enumValue(const nlohmann::json& j, std::string_view key) {
  const auto& values = property(key).at("enum");
  if (j.is_string() && std::find(values.begin(), values.end(), j) != values.end()) {
    return j.get<std::string>();
  }
  std::string list;
  for (const auto& v : values) list += (list.empty() ? "" : "|") + v.get<std::string>();
  throw contractError(fmt::format("\"{}\" must be {}, got {}", key, list, j.dump()));
}

SupportedShapes parseShapes(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"shapes\" must be an object");
  rejectUnknownKeys(j, property("shapes"), "shapes.");
  SupportedShapes s;
  auto list = [&](const char* key) {
    if (!j.contains(key)) return IntSet();
    const auto& v = j[key];
    if (!v.is_array()) throw contractError(fmt::format("\"shapes.{}\" must be an array", key));
    std::string text;
    for (const auto& item : v) {
      if (!text.empty()) text += ',';
      if (item.is_number_integer()) {
        text += std::to_string(item.get<int64_t>());
      } else if (item.is_string()) {
        text += item.get<std::string>();
      } else {
        throw contractError(
            fmt::format("\"shapes.{}\" holds numbers or range strings such as \"1-64\"", key));
      }
    }
    const int64_t max =
        property(std::string("shapes.") + key).at("items").at("anyOf").at(0).at("maximum");
    return IntSet::parse(text, fmt::format("router contract: \"shapes.{}\"", key), 0, max);
  };
  s.experts = list("experts");
  s.k = list("k");
  if (j.contains("max_tokens")) {
    if (!j["max_tokens"].is_number_integer()) {
      throw contractError("\"shapes.max_tokens\" must be a whole number");
    }
    s.maxTokens = static_cast<int64_t>(boundedNumber(j["max_tokens"], "shapes.max_tokens"));
  }
  return s;
}

// "families": {"scores": [...], "groups": bool, "bias": bool}; absent fields: softmax only,
// no groups, no bias.
Families parseFamilies(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"families\" must be an object");
  rejectUnknownKeys(j, property("families"), "families.");
  Families f;
  if (j.contains("scores")) {
    const auto& scores = j["scores"];
    if (!scores.is_array() || scores.empty()) {
      throw contractError("\"families.scores\" must be a non-empty array");
    }
    const auto& allowed = property("families.scores").at("items").at("enum");
    f.softmax = f.sigmoid = false;
    for (const auto& s : scores) {
      if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
        throw contractError(
            fmt::format("\"families.scores\" holds {}, got {}", allowed.dump(), s.dump()));
      }
      (s == "softmax" ? f.softmax : f.sigmoid) = true;
    }
  }
  for (auto [key, out] : {std::pair{"groups", &f.groups}, std::pair{"bias", &f.bias}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean()) throw contractError(fmt::format("\"families.{}\" must be bool", key));
    *out = j[key].get<bool>();
  }
  return f;
}

}  // namespace

const char* tieOrderName(TieOrder t) {
  return t == TieOrder::kAny ? "any" : "lowest-index";
}

TieOrder parseTieOrder(std::string_view text, std::string_view what) {
  if (text == "lowest-index") return TieOrder::kLowestIndex;
  if (text == "any") return TieOrder::kAny;
  throw std::invalid_argument(
      fmt::format("{} must be \"lowest-index\" or \"any\", got \"{}\"", what, text));
}

Contract parseContract(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw contractError("not valid JSON");
  return parseContractJSON(j);
}

Contract parseContractJSON(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("not a JSON object");
  rejectUnknownKeys(j, schema(), "");
  Contract c;
  auto str = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_string()) throw contractError(fmt::format("\"{}\" must be a string", key));
    out = j[key].get<std::string>();
  };
  str("name", c.name);
  str("nonfinite_rows", c.nonfiniteRows);
  if (j.contains("compute") && j["compute"] != property("compute").at("const")) {
    throw contractError(fmt::format("\"compute\" must be {}, got {}",
                                    property("compute").at("const").dump(), j["compute"].dump()));
  }
  if (j.contains("abi")) c.abi = enumValue(j["abi"], "abi");
  if (j.contains("families")) {
    if (!c.v2()) throw contractError("\"families\" is for \"abi\": \"moe_route_v2\" only");
    c.families = parseFamilies(j["families"]);
  }
  if (j.contains("selects_on")) {
    c.selectsOn = enumValue(j["selects_on"], "selects_on") == "logits" ? SelectsOn::kLogits
                                                                       : SelectsOn::kProbabilities;
  }
  if (j.contains("slot_order")) {
    c.slotOrder =
        enumValue(j["slot_order"], "slot_order") == "rank" ? SlotOrder::kRank : SlotOrder::kAny;
  }
  if (j.contains("tie_order")) {
    c.tieOrder =
        parseTieOrder(enumValue(j["tie_order"], "tie_order"), "router contract: \"tie_order\"");
  }
  if (j.contains("batch_invariant")) {
    if (!j["batch_invariant"].is_boolean()) throw contractError("\"batch_invariant\" must be bool");
    c.batchInvariant = j["batch_invariant"].get<bool>();
  }
  // A huge exp budget would excuse every gate (a no-renormalisation bug passed with 1e30).
  if (j.contains("exp_max_ulp")) c.expMaxUlp = boundedNumber(j["exp_max_ulp"], "exp_max_ulp");
  if (j.contains("gate_budget")) {
    const auto& b = j["gate_budget"];
    if (!b.is_object()) throw contractError("\"gate_budget\" must be an object");
    rejectUnknownKeys(b, property("gate_budget"), "gate_budget.");
    if (b.contains("spec32_factor")) {
      c.gateBudget.spec32Factor = boundedNumber(b["spec32_factor"], "gate_budget.spec32_factor");
    }
    if (b.contains("ulp")) c.gateBudget.ulp = boundedNumber(b["ulp"], "gate_budget.ulp");
  }
  if (j.contains("shapes")) c.shapes = parseShapes(j["shapes"]);
  return c;
}

ShapeSpace shapeSpaceFor(const SupportedShapes& supported, std::string_view experts,
                         std::string_view k, std::string_view tokens, std::string_view prefix) {
  ShapeSpace space;
  if (!supported.experts.empty()) space.experts = supported.experts;
  if (!supported.k.empty()) space.k = supported.k;
  if (supported.maxTokens > 0) space.tokens = space.tokens.clamp(0, supported.maxTokens);
  const std::string p(prefix);
  if (!experts.empty()) space.experts = IntSet::parse(experts, p + "experts", 0, kDrawMaxExperts);
  if (!k.empty()) space.k = IntSet::parse(k, p + "k", 0, kDrawMaxExperts + 2);
  if (!tokens.empty()) {
    space.tokens = IntSet::parse(tokens, p + "tokens", 0, kDrawMaxTokens);
    space.tokensGiven = true;
  }
  space.validate();
  return space;
}

std::string contractToJSON(const Contract& c) {
  return contractJSON(c).dump();
}

nlohmann::json contractJSON(const Contract& c) {
  nlohmann::json j;
  j["abi"] = c.abi;
  j["name"] = c.name;
  j["selects_on"] = c.selectsOn == SelectsOn::kLogits ? "logits" : "probabilities";
  j["slot_order"] = c.slotOrder == SlotOrder::kRank ? "rank" : "any";
  j["batch_invariant"] = c.batchInvariant;
  j["compute"] = c.compute;
  j["exp_max_ulp"] = c.expMaxUlp;
  j["gate_budget"] = {{"spec32_factor", c.gateBudget.spec32Factor}, {"ulp", c.gateBudget.ulp}};
  j["nonfinite_rows"] = c.nonfiniteRows;
  j["tie_order"] = tieOrderName(c.tieOrder);
  if (c.v2()) {
    nlohmann::json scores = nlohmann::json::array();
    if (c.families.softmax) scores.push_back("softmax");
    if (c.families.sigmoid) scores.push_back("sigmoid");
    j["families"] = {{"scores", scores}, {"groups", c.families.groups}, {"bias", c.families.bias}};
  }
  if (!c.shapes.any()) {
    nlohmann::json s = nlohmann::json::object();
    // One item per range, as the schema's pattern has it ("8-16", "256").
    auto items = [](const IntSet& set) {
      nlohmann::json a = nlohmann::json::array();
      for (const IntRange& r : set.ranges()) {
        a.push_back(r.lo == r.hi ? fmt::format("{}", r.lo) : fmt::format("{}-{}", r.lo, r.hi));
      }
      return a;
    };
    if (!c.shapes.experts.empty()) s["experts"] = items(c.shapes.experts);
    if (!c.shapes.k.empty()) s["k"] = items(c.shapes.k);
    if (c.shapes.maxTokens > 0) s["max_tokens"] = c.shapes.maxTokens;
    j["shapes"] = s;
  }
  return j;
}

}  // namespace moe::fuzz
