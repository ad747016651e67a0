#include "mini_schema.hpp"

#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <utility>

namespace moe::lean {

using nlohmann::json;

MiniSchema::MiniSchema(json schema) : root_(std::move(schema)) {}

const json& MiniSchema::resolve(const std::string& ref) const {
  const std::string prefix = "#/$defs/";
  if (ref.rfind(prefix, 0) != 0) throw std::invalid_argument("unsupported $ref " + ref);
  return root_.at("$defs").at(ref.substr(prefix.size()));
}

namespace {
bool hasType(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  throw std::invalid_argument("unsupported type " + type);
}

const std::set<std::string> kAnnotations = {"$schema",  "$id",   "title",  "description",
                                            "$comment", "$defs", "default"};
const std::set<std::string> kKeywords = {"type",       "const",    "enum",
                                         "pattern",    "minimum",  "maximum",
                                         "properties", "required", "additionalProperties",
                                         "items",      "$ref",     "anyOf",
                                         "allOf",      "if",       "then"};

const std::regex& cachedRegex(const std::string& pattern) {
  static std::map<std::string, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern)).first;
  return it->second;
}
}  // namespace

void MiniSchema::check(const json& schema, const json& value, const std::string& where,
                       std::vector<std::string>& errors) const {
  for (const auto& [key, _] : schema.items()) {
    if (!kAnnotations.count(key) && !kKeywords.count(key)) {
      std::string message = where + ": schema keyword '";
      message += key;
      message += "' is not supported by the checker";
      errors.push_back(std::move(message));
    }
  }
  if (schema.contains("$ref")) check(resolve(schema["$ref"]), value, where, errors);
  if (schema.contains("type") && !hasType(value, schema["type"])) {
    errors.push_back(where + ": expected " + schema["type"].get<std::string>() + ", got " +
                     value.dump().substr(0, 60));
    return;
  }
  if (schema.contains("const") && value != schema["const"]) {
    errors.push_back(where + ": expected " + schema["const"].dump());
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& option : schema["enum"]) found = found || option == value;
    if (!found) {
      errors.push_back(where + ": " + value.dump() + " is not one of " + schema["enum"].dump());
    }
  }
  if (schema.contains("pattern") && value.is_string() &&
      !std::regex_match(value.get<std::string>(), cachedRegex(schema["pattern"]))) {
    errors.push_back(where + ": \"" + value.get<std::string>() + "\" does not match " +
                     schema["pattern"].get<std::string>());
  }
  if (schema.contains("minimum") && value.is_number() && value < schema["minimum"]) {
    errors.push_back(where + ": " + value.dump() + " is below the minimum");
  }
  if (schema.contains("maximum") && value.is_number() && value > schema["maximum"]) {
    errors.push_back(where + ": " + value.dump() + " is above the maximum");
  }
  if (value.is_object()) {
    const json noProperties = json::object();
    const json& props = schema.contains("properties") ? schema["properties"] : noProperties;
    for (const auto& name : schema.value("required", json::array())) {
      if (!value.contains(name.get<std::string>())) {
        errors.push_back(where + ": missing required field '" + name.get<std::string>() + "'");
      }
    }
    for (const auto& [name, item] : value.items()) {
      const std::string at = std::string(where).append("/").append(name);
      if (props.contains(name)) {
        check(props[name], item, at, errors);
      } else if (schema.contains("additionalProperties")) {
        const json& extra = schema["additionalProperties"];
        if (extra.is_boolean()) {
          if (!extra.get<bool>()) errors.push_back(at + ": unknown field");
        } else {
          check(extra, item, at, errors);
        }
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      check(schema["items"], value[i], where + "/" + std::to_string(i), errors);
    }
  }
  if (schema.contains("anyOf")) {
    bool any = false;
    for (const auto& option : schema["anyOf"]) {
      std::vector<std::string> sub;
      check(option, value, where, sub);
      any = any || sub.empty();
    }
    if (!any) {
      errors.push_back(where + ": matches none of anyOf (" + value.dump().substr(0, 60) + ")");
    }
  }
  for (const auto& part : schema.value("allOf", json::array())) check(part, value, where, errors);
  if (schema.contains("if")) {
    std::vector<std::string> sub;
    check(schema["if"], value, where, sub);
    if (sub.empty() && schema.contains("then")) check(schema["then"], value, where, errors);
  }
}

std::vector<std::string> MiniSchema::validate(const json& doc) const {
  std::vector<std::string> errors;
  check(root_, doc, "", errors);
  return errors;
}

}  // namespace moe::lean
