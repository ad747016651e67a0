// Contracts: defaults when absent, every documented field parsed, bad text rejected.
#include "moe/fuzz/contract.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/recipes.hpp"
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
  EXPECT_THROW(parseContract(R"({"abi":"moe_route_v3"})"), std::invalid_argument);
  // "families" belongs to v2 contracts only.
  EXPECT_THROW(parseContract(R"({"families":{"bias":true}})"), std::invalid_argument);
  EXPECT_THROW(parseContract(R"({"abi":"moe_route_v2","families":{"scores":["relu"]}})"),
               std::invalid_argument);
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

// A v2 contract: the ABI and the families the fuzzer may draw; round trip through the writer.
TEST(ContractV2, AbiAndFamiliesParseAndRoundTrip) {
  const Contract c = parseContract(
      R"({"abi":"moe_route_v2","families":{"scores":["sigmoid"],"groups":true,"bias":true}})");
  EXPECT_TRUE(c.v2());
  EXPECT_FALSE(c.families.softmax);
  EXPECT_TRUE(c.families.sigmoid);
  EXPECT_TRUE(c.families.groups);
  EXPECT_TRUE(c.families.bias);
  const Contract again = parseContract(contractToJSON(c));
  EXPECT_TRUE(again.v2());
  EXPECT_EQ(again.families.sigmoid, true);
  EXPECT_EQ(again.families.softmax, false);
  const Contract plain = parseContract(R"({"abi":"moe_route_v2"})");
  EXPECT_TRUE(plain.families.softmax);
  EXPECT_FALSE(plain.families.groups || plain.families.bias || plain.families.sigmoid);
  EXPECT_FALSE(parseContract("{}").v2());
}

// The family's case JSON: one writer, one reader, bits kept (bias, scale).
TEST(CaseV2, FamilyRoundTripsThroughJSON) {
  ShapeSpace space;
  space.experts = IntSet::range(1, 64);
  space.tokens = IntSet::range(1, 4);
  SeededSource src(7);
  const Families all = Families::everything();
  int withBias = 0, withGroups = 0, invalid = 0;
  for (int i = 0; i < 400; ++i) {
    const Case c = drawFamilyCase(src, space, all);
    ASSERT_TRUE(c.family.has_value());
    const Case back = caseFromJSON(caseToJSON(c));
    ASSERT_TRUE(back.family.has_value());
    EXPECT_EQ(*back.family == *c.family || std::isnan(c.family->scale), true)
        << caseToJSON(c).dump();
    withBias += c.family->bias.empty() ? 0 : 1;
    withGroups += c.family->groups > 1 ? 1 : 0;
    invalid += familyInvalidReason(*c.family, c.experts).empty() ? 0 : 1;
  }
  EXPECT_GT(withBias, 50);
  EXPECT_GT(withGroups, 50);
  EXPECT_GT(invalid, 5);
  // A contract without bias and groups gets neither.
  const Families softmaxOnly;
  for (int i = 0; i < 200; ++i) {
    const Case c = drawFamilyCase(src, space, softmaxOnly);
    EXPECT_TRUE(c.family->bias.empty());
    EXPECT_EQ(c.family->score == ScoreFunction::kSigmoid, false);
    if (familyInvalidReason(*c.family, c.experts).empty()) {
      EXPECT_EQ(c.family->groups, 1);
    }
  }
}

// A fixed recipe spelled out field by field: each field parses, round-trips through the
// writer, and the draw holds to every one of them on valid parameters.
TEST(ContractV2, RestrictedFieldsParseRoundTripAndBindTheDraw) {
  const Contract c =
      parseContract(R"({"abi":"moe_route_v2","families":{"scores":["sigmoid"],"groups":[8],)"
                    R"("topk_groups":[4],"group_score":["top2_sum"],"bias":"required",)"
                    R"("renormalize":[true],"scale":[2.5]}})");
  EXPECT_TRUE(c.families.biasRequired && c.families.bias && c.families.groups);
  EXPECT_EQ(c.families.groupValues.text(), "8");
  EXPECT_EQ(c.families.topkGroups.text(), "4");
  EXPECT_EQ(c.families.groupScores, std::vector<GroupScoreFunction>{GroupScoreFunction::kTop2Sum});
  EXPECT_EQ(c.families.renormalize, std::vector<int32_t>{1});
  EXPECT_EQ(c.families.scales, std::vector<float>{2.5f});
  const Contract again = parseContract(contractToJSON(c));
  EXPECT_EQ(contractToJSON(again), contractToJSON(c));
  ShapeSpace space;
  space.tokens = IntSet::range(1, 4);
  SeededSource src(3);
  int valid = 0;
  for (int i = 0; i < 300; ++i) {
    const Case x = drawFamilyCase(src, space, c.families);
    const Family& f = *x.family;
    if (!familyInvalidReason(f, x.experts).empty()) continue;
    ++valid;
    ASSERT_EQ(x.experts % 8, 0) << caseToJSON(x).dump();
    EXPECT_EQ(f.score, ScoreFunction::kSigmoid);
    EXPECT_EQ(f.bias.size(), static_cast<size_t>(x.experts));
    EXPECT_EQ(f.groups, 8);
    EXPECT_EQ(f.topkGroups, 4);
    EXPECT_EQ(f.groupScore, GroupScoreFunction::kTop2Sum);
    EXPECT_EQ(f.renormalize, 1);
    EXPECT_EQ(f.scale, 2.5f);
  }
  EXPECT_GT(valid, 200);
}

TEST(ContractV2, RecipesFixEveryFieldAndTheShape) {
  const Contract c =
      parseContract(R"({"abi":"moe_route_v2","families":{"recipes":["deepseek-v3","llama4"]}})");
  EXPECT_EQ(c.families.recipes, (std::vector<std::string>{"deepseek-v3", "llama4"}));
  EXPECT_EQ(contractToJSON(parseContract(contractToJSON(c))), contractToJSON(c));
  ShapeSpace space;
  space.tokens = IntSet::range(1, 8);
  SeededSource src(5);
  std::map<std::string, int> seen;
  for (int i = 0; i < 300; ++i) {
    const Case x = drawFamilyCase(src, space, c.families);
    if (!familyInvalidReason(*x.family, x.experts).empty()) continue;
    const std::string recipe(recipeOf(x));
    ASSERT_FALSE(recipe.empty()) << caseToJSON(x).dump();
    ++seen[recipe];
  }
  EXPECT_GT(seen["deepseek-v3"], 50);
  EXPECT_GT(seen["llama4"], 50);
  EXPECT_EQ(seen.size(), 2u);
}

TEST(ContractV2, FamilyMistakesAreErrorsThatNameTheField) {
  auto fails = [](const char* families, const char* named) {
    const std::string text = std::string(R"({"abi":"moe_route_v2","families":)") + families + "}";
    try {
      parseContract(text);
      ADD_FAILURE() << text << " parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  fails(R"({"recipes":["llama5"]})", "unknown recipe \"llama5\"");
  fails(R"({"recipes":["mixtral"],"bias":true})", "give it alone");
  fails(R"({"bias":"sometimes"})", "\"families.bias\" must be true, false or \"required\"");
  fails(R"({"groups":[0]})", "families.groups");
  fails(R"({"scale":["2.5"]})", "families.scale");
  fails(R"({"renormalize":[]})", "families.renormalize");
  fails(R"({"group_score":["mean"]})", "families.group_score");
  fails(R"({"topk_groups":[2]})", "needs groups above 1");
  ShapeSpace narrow;
  narrow.experts = IntSet::range(8, 13);
  const Contract sevens = parseContract(R"({"abi":"moe_route_v2","families":{"groups":[7]}})");
  EXPECT_THROW(checkFamiliesDrawable(sevens.families, narrow), std::invalid_argument);
}

}  // namespace moe::fuzz
