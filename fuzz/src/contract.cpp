#include "moe/fuzz/contract.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace moe::fuzz {

namespace {

std::invalid_argument contractError(std::string_view what) {
  return std::invalid_argument(fmt::format("router contract: {}", what));
}

double nonNegativeNumber(const nlohmann::json& j, const char* key) {
  if (!j.is_number()) throw contractError(fmt::format("\"{}\" must be a number", key));
  double v = j.get<double>();
  if (!std::isfinite(v) || v < 0) {
    throw contractError(fmt::format("\"{}\" must be finite and >= 0, got {}", key, v));
  }
  return v;
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

constexpr std::string_view kKeys[] = {
    "abi",         "name",        "selects_on",     "slot_order", "batch_invariant", "compute",
    "exp_max_ulp", "gate_budget", "nonfinite_rows", "tie_order",  "shapes"};

void rejectUnknownKeys(const nlohmann::json& j) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys)) continue;
    std::string_view best = kKeys[0];
    for (std::string_view k : kKeys) {
      if (editDistance(key, k) < editDistance(key, best)) best = k;
    }
    throw contractError(fmt::format("unknown key \"{}\" (did you mean \"{}\"?)", key, best));
  }
}

// The largest exp error a contract may claim: any real exp is within a few ulp; a claim of
// thousands would excuse every gate (a no-renormalisation bug passed with 1e30).
constexpr double kMaxExpUlp = 1024;

SupportedShapes parseShapes(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"shapes\" must be an object");
  SupportedShapes s;
  auto list = [&](const char* key, int64_t max) {
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
    return IntSet::parse(text, fmt::format("router contract: \"shapes.{}\"", key), 0, max);
  };
  for (const auto& [key, value] : j.items()) {
    if (key != "experts" && key != "k" && key != "max_tokens") {
      throw contractError(
          fmt::format("unknown key \"shapes.{}\" (known: experts, k, max_tokens)", key));
    }
  }
  s.experts = list("experts", kDrawMaxExperts);
  s.k = list("k", kDrawMaxExperts + 2);
  if (j.contains("max_tokens")) {
    const auto& m = j["max_tokens"];
    if (!m.is_number_integer() || m.get<int64_t>() < 1) {
      throw contractError("\"shapes.max_tokens\" must be a whole number >= 1");
    }
    s.maxTokens = m.get<int64_t>();
  }
  return s;
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
  if (!j.is_object()) throw contractError("not a JSON object");
  rejectUnknownKeys(j);
  Contract c;
  auto str = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_string()) throw contractError(fmt::format("\"{}\" must be a string", key));
    out = j[key].get<std::string>();
  };
  str("abi", c.abi);
  str("name", c.name);
  str("compute", c.compute);
  str("nonfinite_rows", c.nonfiniteRows);
  std::string ties;
  str("tie_order", ties);
  if (!ties.empty()) c.tieOrder = parseTieOrder(ties, "router contract: \"tie_order\"");
  if (j.contains("shapes")) c.shapes = parseShapes(j["shapes"]);
  std::string selects, order;
  str("selects_on", selects);
  str("slot_order", order);
  if (selects == "logits") {
    c.selectsOn = SelectsOn::kLogits;
  } else if (selects == "probabilities" || selects.empty()) {
    c.selectsOn = SelectsOn::kProbabilities;
  } else {
    throw contractError(
        fmt::format("\"selects_on\" must be logits|probabilities, got \"{}\"", selects));
  }
  if (order == "rank") {
    c.slotOrder = SlotOrder::kRank;
  } else if (order == "any" || order.empty()) {
    c.slotOrder = SlotOrder::kAny;
  } else {
    throw contractError(fmt::format("\"slot_order\" must be rank|any, got \"{}\"", order));
  }
  if (j.contains("batch_invariant")) {
    if (!j["batch_invariant"].is_boolean()) throw contractError("\"batch_invariant\" must be bool");
    c.batchInvariant = j["batch_invariant"].get<bool>();
  }
  if (c.abi != "moe_route_v1") {
    throw contractError(fmt::format("\"abi\" must be \"moe_route_v1\", got \"{}\"", c.abi));
  }
  if (c.compute != "binary32") {
    throw contractError(fmt::format("\"compute\" must be \"binary32\", got \"{}\"", c.compute));
  }
  if (j.contains("exp_max_ulp")) c.expMaxUlp = nonNegativeNumber(j["exp_max_ulp"], "exp_max_ulp");
  if (c.expMaxUlp > kMaxExpUlp) {
    throw contractError(
        fmt::format("\"exp_max_ulp\" = {} is beyond what any real exp needs (at most {}): it would "
                    "excuse every gate",
                    c.expMaxUlp, kMaxExpUlp));
  }
  if (j.contains("gate_budget")) {
    const auto& b = j["gate_budget"];
    if (!b.is_object()) throw contractError("\"gate_budget\" must be an object");
    for (const auto& [key, value] : b.items()) {
      if (key != "spec32_factor" && key != "ulp") {
        throw contractError(
            fmt::format("unknown key \"gate_budget.{}\" (known: spec32_factor, ulp)", key));
      }
    }
    if (b.contains("spec32_factor")) {
      c.gateBudget.spec32Factor = nonNegativeNumber(b["spec32_factor"], "spec32_factor");
    }
    if (b.contains("ulp")) c.gateBudget.ulp = nonNegativeNumber(b["ulp"], "ulp");
  }
  return c;
}

std::string contractToJSON(const Contract& c) {
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
  if (!c.shapes.any()) {
    nlohmann::json s = nlohmann::json::object();
    if (!c.shapes.experts.empty()) s["experts"] = {c.shapes.experts.text()};
    if (!c.shapes.k.empty()) s["k"] = {c.shapes.k.text()};
    if (c.shapes.maxTokens > 0) s["max_tokens"] = c.shapes.maxTokens;
    j["shapes"] = s;
  }
  return j.dump();
}

}  // namespace moe::fuzz
