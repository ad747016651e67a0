#include "moe/fuzz/vectors.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

nlohmann::json loadVectorFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::runtime_error(fmt::format("{}: not valid JSON", path));
  try {
    checkVectorLayout(j);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
  return j;
}

namespace {

void checkFormatVersion(const nlohmann::json& file) {
  if (!file.contains("formatVersion")) return;  // written before the field: version 1
  const auto& v = file["formatVersion"];
  if (!v.is_number_integer() || v.get<int64_t>() < 1) {
    throw std::invalid_argument(fmt::format(
        "vector file: \"formatVersion\" must be a whole number >= 1, got {}", v.dump()));
  }
  if (v.get<int64_t>() > kVectorFormatVersion) {
    throw std::invalid_argument(
        fmt::format("vector file: format version {} is newer than this moe-oracle reads (up to "
                    "{}): it was written by a later moe-oracle; replay it with that version",
                    v.get<int64_t>(), kVectorFormatVersion));
  }
}

}  // namespace

void checkVectorLayout(const nlohmann::json& file) {
  if (!file.is_object()) throw std::invalid_argument("vector file: top level is not an object");
  checkFormatVersion(file);
  if (!file.contains("testGroups") || !file["testGroups"].is_array()) {
    throw std::invalid_argument("vector file: no \"testGroups\" array");
  }
  for (const auto& g : file["testGroups"]) {
    if (!g.is_object() || !g.contains("type") || !g["type"].is_string()) {
      throw std::invalid_argument("vector file: a test group without a string \"type\"");
    }
    if (!g.contains("tests") || !g["tests"].is_array()) {
      throw std::invalid_argument(
          fmt::format("vector file: group {} has no \"tests\" array", g["type"].dump()));
    }
    // Wycheproof's tcId is a positive integer; a float (1e308) or a string is bad input.
    for (const auto& t : g["tests"]) {
      if (!t.is_object() || !t.contains("tcId") || !t["tcId"].is_number_integer() ||
          t["tcId"].get<int64_t>() < 1) {
        throw std::invalid_argument(
            fmt::format("vector file: group {}: every test needs a positive integer \"tcId\"",
                        g["type"].dump()));
      }
    }
  }
}

namespace {

std::vector<float> hexList(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_array()) {
    throw std::invalid_argument(fmt::format("test: \"{}\" must be an array of hex strings", key));
  }
  std::vector<float> out;
  for (const auto& v : j[key]) {
    if (!v.is_string()) {
      throw std::invalid_argument(fmt::format("test: \"{}\" holds a non-string", key));
    }
    out.push_back(parseHex32(v.get<std::string>()));
  }
  return out;
}

std::vector<int64_t> intList(const nlohmann::json& j, const char* key) {
  if (!j[key].is_array()) {
    throw std::invalid_argument(fmt::format("test: \"{}\" must be an array", key));
  }
  std::vector<int64_t> out;
  for (const auto& v : j[key]) {
    if (!v.is_number_integer()) {
      throw std::invalid_argument(fmt::format("test: \"{}\" holds a non-integer", key));
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

int64_t intField(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    throw std::invalid_argument(fmt::format("test: \"{}\" must be an integer", key));
  }
  return j[key].get<int64_t>();
}

}  // namespace

RoutingVector parseRoutingTest(const nlohmann::json& t) {
  if (!t.is_object()) throw std::invalid_argument("test: not an object");
  RoutingVector v;
  v.tcId = t.contains("tcId") && t["tcId"].is_number_integer() ? t["tcId"].get<int64_t>() : 0;
  v.result = t.value("result", std::string("valid"));
  int64_t k = intField(t, "k");
  if (k < 0 || k > (int64_t{1} << 24)) throw std::invalid_argument("test: k out of range");
  v.k = static_cast<int32_t>(k);
  v.logits = hexList(t, "logits");
  if (v.logits.empty()) throw std::invalid_argument("test: no logits");
  if (v.logits.size() > (size_t{1} << 20)) throw std::invalid_argument("test: too many logits");
  if (t.contains("ranks")) v.ranks = intList(t, "ranks");
  if (t.contains("keptExperts")) v.keptExperts = intList(t, "keptExperts");
  if (t.contains("exps32")) v.exps32 = hexList(t, "exps32");
  if (t.contains("probs32")) v.probs32 = hexList(t, "probs32");
  if (t.contains("gates32")) v.gates32 = hexList(t, "gates32");
  return v;
}

Case caseOfReproducer(const nlohmann::json& t) {
  if (!t.is_object()) throw std::invalid_argument("test: not an object");
  return caseFromJSON(t);
}

bool isDispatchVectorFile(const nlohmann::json& file) {
  if (!file.is_object() || !file.contains("testGroups")) return false;
  for (const auto& g : file["testGroups"]) {
    if (g.value("type", "") == "DispatchReproducer") return true;
  }
  return false;
}

bool isLayerVectorFile(const nlohmann::json& file) {
  if (!file.is_object() || !file.contains("testGroups")) return false;
  for (const auto& g : file["testGroups"]) {
    if (g.value("type", "") == "LayerReproducer") return true;
  }
  return false;
}

}  // namespace moe::fuzz
