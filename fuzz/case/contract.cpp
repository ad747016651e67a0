#include "moe/fuzz/contract.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <vector>

#include "contract_schema.hpp"  // generated from docs/contract.schema.json
#include "moe/fuzz/dispatch_contract.hpp"
#include "moe/fuzz/recipes.hpp"

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

// An array of whole numbers and range strings ("8", "1-64") as one IntSet within [min, max],
// for "shapes" and the family's group counts; `field` names it in errors.
IntSet rangeList(const nlohmann::json& v, const std::string& field, int64_t min, int64_t max) {
  std::string text;
  for (const auto& item : v) {
    if (!text.empty()) text += ',';
    if (item.is_number_integer()) {
      text += std::to_string(item.get<int64_t>());
    } else if (item.is_string()) {
      text += item.get<std::string>();
    } else {
      throw contractError(
          fmt::format("\"{}\" holds whole numbers or range strings such as \"1-64\"", field));
    }
  }
  return IntSet::parse(text, fmt::format("router contract: \"{}\"", field), min, max);
}

// A router's contract: the dispatch door's ABI and fields are not its own.
void rejectDispatchFields(const nlohmann::json& j, std::string_view abi) {
  if (abi == kAbiDispatchV1) {
    throw contractError(
        "\"abi\": \"moe_dispatch_v1\" is the dispatch door's: this library is fuzzed as a "
        "router (moe_route_v1 / moe_route_v2)");
  }
  if (j.contains("within_expert_order")) {
    throw contractError("\"within_expert_order\" is a field of a moe_dispatch_v1 contract");
  }
  if (j.contains("shapes") && j["shapes"].is_object()) {
    for (const char* key : {"block", "capacity"}) {
      if (j["shapes"].contains(key)) {
        throw contractError(
            fmt::format("\"shapes.{}\" is a field of a moe_dispatch_v1 contract", key));
      }
    }
  }
}

SupportedShapes parseShapes(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"shapes\" must be an object");
  rejectUnknownKeys(j, property("shapes"), "shapes.");
  SupportedShapes s;
  auto list = [&](const char* key) {
    if (!j.contains(key)) return IntSet();
    const auto& v = j[key];
    if (!v.is_array()) throw contractError(fmt::format("\"shapes.{}\" must be an array", key));
    const std::string field = std::string("shapes.") + key;
    return rangeList(v, field, 0, property(field).at("items").at("anyOf").at(0).at("maximum"));
  };
  s.experts = list("experts");
  s.k = list("k");
  s.tokens = list("tokens");
  s.hidden = list("hidden");
  s.intermediate = list("intermediate");
  if (j.contains("max_tokens")) {
    if (!j["max_tokens"].is_number_integer()) {
      throw contractError("\"shapes.max_tokens\" must be a whole number");
    }
    s.maxTokens = static_cast<int64_t>(boundedNumber(j["max_tokens"], "shapes.max_tokens"));
  }
  return s;
}

// A family field's list: an array (not empty) whose items `item` reads.
template <class Item>
void familyList(const nlohmann::json& j, const char* key, Item item) {
  const auto& v = j[key];
  if (!v.is_array() || v.empty()) {
    throw contractError(fmt::format("\"families.{}\" must be a non-empty array", key));
  }
  for (const auto& x : v) item(x);
}

// One of the schema's enum values of a family list's items.
std::string familyEnumItem(const nlohmann::json& x, const char* key) {
  const auto& allowed = property(std::string("families.") + key).at("items").at("enum");
  if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) {
    throw contractError(
        fmt::format("\"families.{}\" holds {}, got {}", key, allowed.dump(), x.dump()));
  }
  return x.get<std::string>();
}

// Whole numbers and range strings ("1-8"), as "shapes" takes them, for groups and
// topk_groups.
IntSet familyIntSet(const nlohmann::json& j, const char* key) {
  familyList(j, key, [](const nlohmann::json&) {});  // a non-empty array
  return rangeList(j[key], std::string("families.") + key, 1, kDrawMaxExperts);
}

// "families": {"scores": [...], "groups": bool or [values], "topk_groups": [values],
// "group_score": [...], "bias": bool or "required", "renormalize": [bools], "scale":
// [values]} or {"recipes": [names]}; absent fields: softmax only, no groups, no bias, the
// rest not restricted.
Families parseFamilies(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"families\" must be an object");
  rejectUnknownKeys(j, property("families"), "families.");
  if (j.contains("recipes")) {
    if (j.size() > 1) {
      throw contractError(
          "\"families.recipes\" fixes every field of the family: give it alone, or list the "
          "fields without it");
    }
    std::string names;
    familyList(j, "recipes", [&](const nlohmann::json& x) {
      if (!x.is_string()) throw contractError("\"families.recipes\" holds recipe names");
      names += (names.empty() ? "" : ",") + x.get<std::string>();
    });
    return familiesOfRecipes(names, "router contract: \"families.recipes\"");
  }
  Families f;
  if (j.contains("scores")) {
    f.softmax = f.sigmoid = false;
    familyList(j, "scores", [&](const nlohmann::json& x) {
      (familyEnumItem(x, "scores") == "softmax" ? f.softmax : f.sigmoid) = true;
    });
  }
  if (j.contains("groups")) {
    if (j["groups"].is_boolean()) {
      f.groups = j["groups"].get<bool>();
    } else {
      f.groupValues = familyIntSet(j, "groups");
      f.groups = f.groupValues.max() > 1;
    }
  }
  if (j.contains("topk_groups")) f.topkGroups = familyIntSet(j, "topk_groups");
  if (j.contains("group_score")) {
    familyList(j, "group_score", [&](const nlohmann::json& x) {
      const int32_t v = familyEnumItem(x, "group_score") == "max" ? 0 : 1;
      if (std::find(f.groupScores.begin(), f.groupScores.end(), v) == f.groupScores.end()) {
        f.groupScores.push_back(v);
      }
    });
  }
  if (j.contains("bias")) {
    const auto& b = j["bias"];
    if (b.is_boolean()) {
      f.bias = b.get<bool>();
    } else if (b == "required") {
      f.bias = f.biasRequired = true;
    } else {
      throw contractError(
          fmt::format("\"families.bias\" must be true, false or \"required\", got {}", b.dump()));
    }
  }
  if (j.contains("renormalize")) {
    familyList(j, "renormalize", [&](const nlohmann::json& x) {
      if (!x.is_boolean()) throw contractError("\"families.renormalize\" holds booleans");
      const int32_t v = x.get<bool>() ? 1 : 0;
      if (std::find(f.renormalize.begin(), f.renormalize.end(), v) == f.renormalize.end()) {
        f.renormalize.push_back(v);
      }
    });
  }
  if (j.contains("scale")) {
    familyList(j, "scale", [&](const nlohmann::json& x) {
      if (!x.is_number() || !std::isfinite(x.get<double>())) {
        throw contractError(
            fmt::format("\"families.scale\" holds finite numbers, got {}", x.dump()));
      }
      // The kernel's scale is a binary32 (route_abi.h): 2.827 is drawn as float(2.827).
      f.scales.push_back(static_cast<float>(x.get<double>()));
    });
  }
  if (!f.topkGroups.empty() && f.topkGroups.min() > 1 && !f.groups) {
    throw contractError(
        "\"families.topk_groups\" above 1 needs groups above 1 (\"families.groups\")");
  }
  return f;
}

// The fused layer's fields (moe_layer_v1 only).
void parseLayerPromise(const nlohmann::json& j, Contract& c) {
  for (const char* key : {"activation", "dtype", "accumulate", "budget_factor", "silu_ulp"}) {
    if (j.contains(key) && !c.isLayer()) {
      throw contractError(fmt::format("\"{}\" is for \"abi\": \"moe_layer_v1\" only", key));
    }
  }
  if (j.contains("shapes") && !c.isLayer()) {
    for (const char* key : {"hidden", "intermediate"}) {
      if (j["shapes"].is_object() && j["shapes"].contains(key)) {
        throw contractError(
            fmt::format("\"shapes.{}\" is for \"abi\": \"moe_layer_v1\" only", key));
      }
    }
  }
  LayerPromise& l = c.layer;
  if (j.contains("activation")) l.activation = enumValue(j["activation"], "activation");
  if (j.contains("dtype")) {
    if (!j["dtype"].is_array() || j["dtype"].empty()) {
      throw contractError("\"dtype\" must be a non-empty array");
    }
    l.f32 = l.bf16 = false;
    const auto& allowed = property("dtype").at("items").at("enum");
    for (const auto& x : j["dtype"]) {
      if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) {
        throw contractError(fmt::format("\"dtype\" holds {}, got {}", allowed.dump(), x.dump()));
      }
      (x == "bf16" ? l.bf16 : l.f32) = true;
    }
  }
  if (j.contains("accumulate") && j["accumulate"] != property("accumulate").at("const")) {
    throw contractError(fmt::format("\"accumulate\" must be {}, got {}",
                                    property("accumulate").at("const").dump(),
                                    j["accumulate"].dump()));
  }
  if (j.contains("budget_factor")) {
    l.budgetFactor = boundedNumber(j["budget_factor"], "budget_factor");
  }
  if (j.contains("silu_ulp")) l.siluUlp = boundedNumber(j["silu_ulp"], "silu_ulp");
}

}  // namespace

Families familiesOfRecipes(std::string_view names, std::string_view what) {
  Families f;
  f.softmax = false;
  size_t start = 0;
  while (start <= names.size()) {
    const size_t comma = std::min(names.find(',', start), names.size());
    const std::string name(names.substr(start, comma - start));
    const Recipe* r = findRecipe(name);
    if (!r) {
      throw std::invalid_argument(
          fmt::format("{}: unknown recipe \"{}\"; the recipes are {}", what, name, recipeNames()));
    }
    if (std::find(f.recipes.begin(), f.recipes.end(), name) == f.recipes.end()) {
      f.recipes.push_back(name);
    }
    // What the recipes draw, for every reader of the other fields.
    (r->score == 1 ? f.sigmoid : f.softmax) = true;
    f.groups = f.groups || r->groups > 1;
    f.bias = f.bias || r->bias;
    start = comma + 1;
  }
  return f;
}

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
  // A contract written for a later schema may use a key of this one in another sense.
  if (j.contains("schema_version") &&
      j["schema_version"] != property("schema_version").at("const")) {
    throw contractError(fmt::format(
        "\"schema_version\" {} is not the contract schema this moe-oracle reads (version {}): "
        "the contract was written for another moe-oracle",
        j["schema_version"].dump(), property("schema_version").at("const").dump()));
  }
  if (j.contains("abi")) c.abi = enumValue(j["abi"], "abi");
  rejectDispatchFields(j, c.abi);
  if (j.contains("families")) {
    if (!c.v2() && !c.isLayer()) {
      throw contractError("\"families\" is for \"abi\": \"moe_route_v2\" or \"moe_layer_v1\" only");
    }
    c.families = parseFamilies(j["families"]);
  }
  parseLayerPromise(j, c);
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
  if (!supported.tokens.empty()) {
    space.tokens = supported.tokens;
    space.tokensGiven = true;
  }
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

namespace {

// One item per range, as the schema's pattern has it ("8-16", "256").
nlohmann::json rangeItems(const IntSet& set) {
  nlohmann::json a = nlohmann::json::array();
  for (const IntRange& r : set.ranges()) {
    a.push_back(r.lo == r.hi ? fmt::format("{}", r.lo) : fmt::format("{}-{}", r.lo, r.hi));
  }
  return a;
}

nlohmann::json familiesJSON(const Families& f) {
  if (!f.recipes.empty()) return {{"recipes", f.recipes}};
  nlohmann::json scores = nlohmann::json::array();
  if (f.softmax) scores.push_back("softmax");
  if (f.sigmoid) scores.push_back("sigmoid");
  nlohmann::json j = {{"scores", scores}};
  j["groups"] = f.groupValues.empty() ? nlohmann::json(f.groups) : rangeItems(f.groupValues);
  if (!f.topkGroups.empty()) j["topk_groups"] = rangeItems(f.topkGroups);
  if (!f.groupScores.empty()) {
    auto& g = j["group_score"] = nlohmann::json::array();
    for (int32_t v : f.groupScores) g.push_back(v == 0 ? "max" : "top2_sum");
  }
  j["bias"] = f.biasRequired ? nlohmann::json("required") : nlohmann::json(f.bias);
  if (!f.renormalize.empty()) {
    auto& r = j["renormalize"] = nlohmann::json::array();
    for (int32_t v : f.renormalize) r.push_back(v == 1);
  }
  if (!f.scales.empty()) {
    auto& sc = j["scale"] = nlohmann::json::array();
    for (float v : f.scales) sc.push_back(static_cast<double>(v));
  }
  return j;
}

}  // namespace

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
  if (c.v2() || c.isLayer()) j["families"] = familiesJSON(c.families);
  if (c.isLayer()) {
    j["activation"] = c.layer.activation;
    nlohmann::json dtypes = nlohmann::json::array();
    if (c.layer.f32) dtypes.push_back("f32");
    if (c.layer.bf16) dtypes.push_back("bf16");
    j["dtype"] = dtypes;
    j["accumulate"] = c.layer.accumulate;
    j["budget_factor"] = c.layer.budgetFactor;
    j["silu_ulp"] = c.layer.siluUlp;
  }
  if (!c.shapes.any()) {
    nlohmann::json s = nlohmann::json::object();
    const auto items = rangeItems;
    if (!c.shapes.experts.empty()) s["experts"] = items(c.shapes.experts);
    if (!c.shapes.k.empty()) s["k"] = items(c.shapes.k);
    if (!c.shapes.tokens.empty()) s["tokens"] = items(c.shapes.tokens);
    if (c.shapes.maxTokens > 0) s["max_tokens"] = c.shapes.maxTokens;
    if (!c.shapes.hidden.empty()) s["hidden"] = items(c.shapes.hidden);
    if (!c.shapes.intermediate.empty()) s["intermediate"] = items(c.shapes.intermediate);
    j["shapes"] = s;
  }
  return j;
}

}  // namespace moe::fuzz

// ---- The dispatch door's contract (dispatch_contract.hpp): the same schema and readers. ----

namespace moe::fuzz {

namespace {

// The keys each door reads: a key of the other door is refused by name, not ignored.
constexpr std::string_view kRouteOnlyKeys[] = {"families",        "selects_on",     "slot_order",
                                               "batch_invariant", "compute",        "exp_max_ulp",
                                               "gate_budget",     "nonfinite_rows", "tie_order"};
constexpr std::string_view kDispatchOnlyKeys[] = {"within_expert_order"};
constexpr std::string_view kDispatchShapeKeys[] = {"tokens", "k", "experts", "block", "capacity"};

void refuseKeys(const nlohmann::json& j, std::span<const std::string_view> keys,
                std::string_view prefix, std::string_view door) {
  for (std::string_view key : keys) {
    if (j.contains(std::string(key))) {
      throw contractError(
          fmt::format("\"{}{}\" is not a field of a {} contract", prefix, key, door));
    }
  }
}

DispatchShapes parseDispatchShapes(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("\"shapes\" must be an object");
  rejectUnknownKeys(j, property("shapes"), "shapes.");
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kDispatchShapeKeys), std::end(kDispatchShapeKeys), key) ==
        std::end(kDispatchShapeKeys)) {
      throw contractError(fmt::format(
          "\"shapes.{}\" is not a field of a moe_dispatch_v1 contract (it takes tokens, k, "
          "experts, block, capacity)",
          key));
    }
  }
  DispatchShapes s;
  auto list = [&](const char* key, IntSet& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_array()) throw contractError(fmt::format("\"shapes.{}\" must be an array", key));
    const std::string field = std::string("shapes.") + key;
    const auto& item = property(field).at("items").at("anyOf").at(0);
    out = rangeList(j[key], field, item.value("minimum", int64_t{0}), item.at("maximum"));
  };
  list("tokens", s.tokens);
  list("k", s.k);
  list("experts", s.experts);
  list("block", s.block);
  list("capacity", s.capacity);
  return s;
}

nlohmann::json dispatchShapesJSON(const DispatchShapes& s) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* key, const IntSet& set) {
    if (!set.empty()) j[key] = rangeItems(set);
  };
  put("tokens", s.tokens);
  put("k", s.k);
  put("experts", s.experts);
  put("block", s.block);
  put("capacity", s.capacity);
  return j;
}

}  // namespace

const char* withinExpertOrderName(WithinExpertOrder o) {
  return o == WithinExpertOrder::kAny ? "any" : "slot";
}

DispatchContract parseDispatchContract(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw contractError("not valid JSON");
  return parseDispatchContractJSON(j);
}

DispatchContract parseDispatchContractJSON(const nlohmann::json& j) {
  if (!j.is_object()) throw contractError("not a JSON object");
  rejectUnknownKeys(j, schema(), "");
  refuseKeys(j, kRouteOnlyKeys, "", kAbiDispatchV1);
  if (j.contains("abi") && enumValue(j["abi"], "abi") != kAbiDispatchV1) {
    throw contractError(
        fmt::format("\"abi\" is {} in the contract of a moe_dispatch_v1 library", j["abi"].dump()));
  }
  DispatchContract c;
  if (j.contains("name")) {
    if (!j["name"].is_string()) throw contractError("\"name\" must be a string");
    c.name = j["name"].get<std::string>();
  }
  if (j.contains("within_expert_order")) {
    c.order = enumValue(j["within_expert_order"], "within_expert_order") == "any"
                  ? WithinExpertOrder::kAny
                  : WithinExpertOrder::kSlot;
  }
  if (j.contains("shapes")) c.shapes = parseDispatchShapes(j["shapes"]);
  return c;
}

nlohmann::json dispatchContractJSON(const DispatchContract& c) {
  nlohmann::json j = {{"abi", std::string(kAbiDispatchV1)},
                      {"name", c.name},
                      {"within_expert_order", withinExpertOrderName(c.order)}};
  if (!c.shapes.any()) j["shapes"] = dispatchShapesJSON(c.shapes);
  return j;
}

}  // namespace moe::fuzz
