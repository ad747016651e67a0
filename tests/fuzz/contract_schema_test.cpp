// docs/contract.schema.json is the contract's one definition: the parser takes its keys,
// enums and limits from it, and every contract the project writes or ships conforms to it
// (checked with the same small JSON Schema checker that checks the golden vectors).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "mini_schema.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/recipes.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::fuzz {
namespace {

nlohmann::json loadSchema() {
  std::ifstream in(MOE_CONTRACT_SCHEMA);
  return nlohmann::json::parse(in);
}

std::string describe(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

TEST(ContractSchema, EveryContractTheProjectWritesConforms) {
  const lean::MiniSchema schema(loadSchema());
  std::vector<std::string> names = builtinRouterNames();
  names.push_back("spec32");
  for (const auto& name : names) {
    const auto router = openRouter(name);
    const auto errors = schema.validate(nlohmann::json::parse(contractToJSON(router->contract())));
    EXPECT_TRUE(errors.empty()) << name << ":\n" << describe(errors);
  }
  Contract full = parseContract(
      R"({"tie_order":"any","shapes":{"experts":[256,"8-16"],"k":[8],"max_tokens":4096}})");
  const auto errors = schema.validate(nlohmann::json::parse(contractToJSON(full)));
  EXPECT_TRUE(errors.empty()) << describe(errors);
  for (const char* v2 :
       {R"({"abi":"moe_route_v2","families":{"scores":["sigmoid"],"groups":[8,"1-2"],)"
        R"("topk_groups":[4],"group_score":["top2_sum"],"bias":"required",)"
        R"("renormalize":[true,false],"scale":[2.5,1]},"shapes":{"tokens":["1-65536"]}})",
        R"({"abi":"moe_route_v2","families":{"recipes":["deepseek-v3","llama4"]}})"}) {
    const auto written = nlohmann::json::parse(contractToJSON(parseContract(v2)));
    const auto v2errors = schema.validate(written);
    EXPECT_TRUE(v2errors.empty()) << written << "\n" << describe(v2errors);
  }
}

// The schema lists the recipes the fuzzer knows, in its order.
TEST(ContractSchema, TheRecipesAreTheTables) {
  const auto names =
      loadSchema()["properties"]["families"]["properties"]["recipes"]["items"]["enum"];
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n.get<std::string>();
  EXPECT_EQ(listed, recipeNames());
}

// The schema and the parser agree both ways on what is refused.
TEST(ContractSchema, TheParserRefusesWhatTheSchemaRefuses) {
  const lean::MiniSchema schema(loadSchema());
  for (const char* bad :
       {R"({"slot-order":"rank"})", R"({"exp_max_ulp":2000})", R"({"tie_order":"highest"})",
        R"({"gate_budget":{"factor":1}})", R"({"shapes":{"experts":[5000]}})",
        R"({"abi":"moe_route_v3"})", R"({"shapes":{"max_tokens":0}})",
        R"({"abi":"moe_route_v2","families":{"bias":"maybe"}})",
        R"({"abi":"moe_route_v2","families":{"recipes":["llama5"]}})",
        R"({"abi":"moe_route_v2","families":{"renormalize":["yes"]}})"}) {
    EXPECT_FALSE(schema.validate(nlohmann::json::parse(bad)).empty()) << bad;
    EXPECT_THROW(parseContract(bad), std::invalid_argument) << bad;
  }
  for (const char* good : {R"({"exp_max_ulp":1024})", R"({"tie_order":"any"})",
                           R"({"shapes":{"k":["1-8"],"max_tokens":65536}})",
                           R"({"abi":"moe_route_v2","families":{"bias":"required"}})",
                           R"({"shapes":{"tokens":[1,"4-8"]}})"}) {
    EXPECT_TRUE(schema.validate(nlohmann::json::parse(good)).empty()) << good;
    EXPECT_NO_THROW(parseContract(good)) << good;
  }
}

}  // namespace
}  // namespace moe::fuzz
