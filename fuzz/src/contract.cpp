#include "moe/fuzz/contract.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

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

}  // namespace

Contract parseContract(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw contractError("not valid JSON");
  if (!j.is_object()) throw contractError("not a JSON object");
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
  if (j.contains("gate_budget")) {
    const auto& b = j["gate_budget"];
    if (!b.is_object()) throw contractError("\"gate_budget\" must be an object");
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
  return j.dump();
}

}  // namespace moe::fuzz
