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
