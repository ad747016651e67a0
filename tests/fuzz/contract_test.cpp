// Contracts: defaults when absent, every documented field parsed, bad text rejected.
#include "moe/fuzz/contract.hpp"

#include <gtest/gtest.h>

#include "moe/routers.hpp"

namespace moe::fuzz {
namespace {

TEST(Contract, AbsentFieldsKeepTheDocumentedDefaults) {
  Contract c = parseContract("{}");
  EXPECT_EQ(c.selectsOn, SelectsOn::kProbabilities);
  EXPECT_EQ(c.slotOrder, SlotOrder::kAny);
  EXPECT_FALSE(c.batchInvariant);
  EXPECT_EQ(c.gateBudget.spec32Factor, 2.0);
  EXPECT_EQ(c.gateBudget.ulp, 4.0);
}

TEST(Contract, ParsesEveryField) {
  Contract c =
      parseContract(R"({"abi":"moe_route_v1","name":"x","selects_on":"logits","slot_order":"rank",)"
                    R"("batch_invariant":true,"compute":"binary32","exp_max_ulp":3,)"
                    R"("gate_budget":{"spec32_factor":5,"ulp":7},"nonfinite_rows":"ids -1"})");
  EXPECT_EQ(c.name, "x");
  EXPECT_EQ(c.selectsOn, SelectsOn::kLogits);
  EXPECT_EQ(c.slotOrder, SlotOrder::kRank);
  EXPECT_TRUE(c.batchInvariant);
  EXPECT_EQ(c.expMaxUlp, 3);
  EXPECT_EQ(c.gateBudget.spec32Factor, 5);
  EXPECT_EQ(c.gateBudget.ulp, 7);
  EXPECT_EQ(parseContract(contractToJSON(c)).gateBudget.ulp, 7);
}

TEST(Contract, RejectsBadText) {
  EXPECT_THROW(parseContract("not json"), std::invalid_argument);
  EXPECT_THROW(parseContract("[1]"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"selects_on":"votes"})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"exp_max_ulp":-1})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"abi":"moe_route_v2"})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"batch_invariant":"yes"})"), std::invalid_argument);
}

TEST(Contract, EveryBuiltinRouterContractParses) {
  for (const auto& r : moe::builtinRouters()) {
    EXPECT_NO_THROW(parseContract(r.contract_json)) << r.name;
  }
}

}  // namespace
}  // namespace moe::fuzz

namespace moe::fuzz {
namespace {

TEST(ContractTies, TieOrderAndShapesParseAndRoundTrip) {
  Contract c = parseContract(
      R"({"tie_order":"any","shapes":{"experts":[256,"8-16"],"k":[8],"max_tokens":4096}})");
  EXPECT_EQ(c.tieOrder, TieOrder::kAny);
  EXPECT_TRUE(c.shapes.experts.contains(256));
  EXPECT_TRUE(c.shapes.experts.contains(12));
  EXPECT_FALSE(c.shapes.experts.contains(17));
  EXPECT_EQ(c.shapes.k.text(), "8");
  EXPECT_EQ(c.shapes.maxTokens, 4096);
  const Contract again = parseContract(contractToJSON(c));
  EXPECT_EQ(again.tieOrder, TieOrder::kAny);
  EXPECT_EQ(again.shapes.experts.text(), "8-16,256");
  EXPECT_EQ(parseContract("{}").tieOrder, TieOrder::kLowestIndex);
}

// A careless contract must fail loudly, naming what is wrong: an ignored typo silently
// weakened the checks, and a huge exp budget let a no-renormalisation bug pass.
TEST(ContractTies, MistakesAreErrorsThatNameTheProblem) {
  auto message = [](const char* text) {
    try {
      parseContract(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(R"({"slot-order":"rank"})").find("did you mean \"slot_order\""),
            std::string::npos);
  EXPECT_NE(message(R"({"batch_invarient":true})").find("did you mean \"batch_invariant\""),
            std::string::npos);
  EXPECT_NE(message(R"({"exp_max_ulp":1e30})").find("exp_max_ulp"), std::string::npos);
  EXPECT_NE(message(R"({"tie_order":"highest"})").find("tie_order"), std::string::npos);
  EXPECT_NE(message(R"({"shapes":{"experts":[0,5000]}})").find("shapes.experts"),
            std::string::npos);
  EXPECT_NE(message(R"({"shapes":{"expert":[8]}})").find("shapes.expert"), std::string::npos);
  EXPECT_NE(message(R"({"gate_budget":{"factor":2}})").find("gate_budget.factor"),
            std::string::npos);
}

}  // namespace
}  // namespace moe::fuzz
