#pragma once
// A small JSON Schema checker for the subset lean-traces/moe_vectors_v1.schema.json uses
// (type, const, enum, pattern, minimum, maximum, properties, required, additionalProperties, items,
// $ref to #/$defs, anyOf, allOf, if/then). A keyword outside that subset is reported as an
// error rather than ignored, so the schema cannot carry a constraint nobody checks.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace moe::lean {

class MiniSchema {
 public:
  explicit MiniSchema(nlohmann::json schema);
  // Every violation as "<json pointer>: <what>"; empty when the document conforms.
  std::vector<std::string> validate(const nlohmann::json& doc) const;

 private:
  void check(const nlohmann::json& schema, const nlohmann::json& value, const std::string& where,
             std::vector<std::string>& errors) const;
  const nlohmann::json& resolve(const std::string& ref) const;
  nlohmann::json root_;
};

}  // namespace moe::lean
