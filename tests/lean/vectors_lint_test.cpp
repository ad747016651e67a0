// Lint of the Lean golden vectors: the file conforms to lean-traces/moe_vectors_v1.schema.json
// (no unknown fields, values in their formats), tcIds are unique, numberOfTests is right,
// every flag used has a note and every note is used, and every definition of docs/design.md §1
// is covered. The schema checker itself is tested on small documents first.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "lean_vectors.hpp"
#include "mini_schema.hpp"

namespace moe::lean {
namespace {

json readSchema() {
  std::ifstream in(schemaPath());
  if (!in) throw std::runtime_error("cannot read " + schemaPath());
  return json::parse(in);
}

std::string firstErrors(const std::vector<std::string>& errors) {
  std::string out;
  for (std::size_t i = 0; i < errors.size() && i < 20; ++i) out += errors[i] + "\n";
  return out;
}

json minimalFile() {
  return json::parse(R"({
    "algorithm": "moe-topk-routing", "schema": "moe_vectors_v1.schema.json",
    "generatorVersion": "t", "provenance": {}, "header": [], "notes": {"ExactTie": "x"},
    "numberOfTests": 1,
    "testGroups": [{"type": "RoutingTest", "tests": [
      {"tcId": 1, "comment": "", "flags": ["ExactTie"], "result": "valid", "k": 1,
       "logits": ["0x00000000", "0x80000000"], "ranks": [0, 1], "keptExperts": [0]}]}]})");
}

TEST(MiniSchema, AcceptsAMinimalFile) {
  const MiniSchema schema(readSchema());
  EXPECT_EQ(firstErrors(schema.validate(minimalFile())), "");
}

TEST(MiniSchema, RejectsUnknownFieldBadHexMissingFieldAndBadResult) {
  const MiniSchema schema(readSchema());
  json doc = minimalFile();
  doc["testGroups"][0]["tests"][0]["surprise"] = 1;
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc = minimalFile();
  doc["testGroups"][0]["tests"][0]["logits"][0] = "0x0000000";  // 7 digits
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc = minimalFile();
  doc["testGroups"][0]["tests"][0].erase("ranks");
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc = minimalFile();
  doc["testGroups"][0]["tests"][0]["result"] = "maybe";
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc = minimalFile();
  doc["extra"] = true;
  EXPECT_EQ(schema.validate(doc).size(), 1u);
}

// The routing family's groups are checked too, not skipped as unknown types.
TEST(MiniSchema, ChecksTheFamilyGroups) {
  const MiniSchema schema(readSchema());
  json doc = minimalFile();
  doc["testGroups"][0]["type"] = "SigmoidTest";
  doc["testGroups"][0]["tests"][0] = json::parse(R"({"tcId": 1, "comment": "", "flags": [],
    "result": "valid", "context": "binary32", "logits": ["0x00000000"],
    "exps": ["0x3f800000"], "sigmoid": ["0x3f000000"]})");
  EXPECT_EQ(firstErrors(schema.validate(doc)), "");
  doc["testGroups"][0]["tests"][0].erase("sigmoid");
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc = minimalFile();
  doc["testGroups"][0]["type"] = "RouteScoresTest";
  doc["testGroups"][0]["tests"][0] = json::parse(R"({"tcId": 1, "comment": "", "flags": [],
    "result": "valid", "context": "rational", "k": 1, "score": "sigmoid", "groups": 1,
    "topkGroups": 1, "groupScore": "max", "renormalize": true, "scale": "1/1",
    "paramsValid": true, "brokenRules": [], "scores": ["1/2"],
    "keys": ["1/2"], "groupScores": ["1/2"], "keptGroups": [0], "eligible": [true],
    "routeRanks": [0], "routeKept": [true], "routeKeptExperts": [0], "gates": ["1/1"]})");
  EXPECT_EQ(firstErrors(schema.validate(doc)), "");
  doc["testGroups"][0]["tests"][0]["groupScore"] = "mean";
  EXPECT_EQ(schema.validate(doc).size(), 1u);
  doc["testGroups"][0]["tests"][0]["groupScore"] = "max";
  doc["testGroups"][0]["tests"][0].erase("brokenRules");
  EXPECT_EQ(schema.validate(doc).size(), 1u);
}

TEST(MiniSchema, RejectsKeywordsItCannotCheck) {
  const MiniSchema schema(json::parse(R"({"type": "object", "maxProperties": 1})"));
  EXPECT_EQ(schema.validate(json::object()).size(), 1u);
}

TEST(LeanVectorsLint, ConformsToTheSchema) {
  const MiniSchema schema(readSchema());
  const auto errors = schema.validate(vectors());
  EXPECT_TRUE(errors.empty()) << errors.size() << " schema violations, first:\n"
                              << firstErrors(errors);
}

TEST(LeanVectorsLint, TcIdsUniqueAndCountCorrect) {
  std::set<long> ids;
  std::size_t total = 0;
  for (const auto& group : vectors().at("testGroups")) {
    for (const auto& test : group.at("tests")) {
      ++total;
      EXPECT_TRUE(ids.insert(test.at("tcId").get<long>()).second)
          << "duplicate tcId " << test.at("tcId");
    }
  }
  EXPECT_EQ(vectors().at("numberOfTests").get<std::size_t>(), total);
}

TEST(LeanVectorsLint, EveryFlagHasANoteAndEveryNoteIsUsed) {
  std::set<std::string> used;
  for (const auto& group : vectors().at("testGroups")) {
    for (const auto& test : group.at("tests")) {
      for (const auto& flag : test.at("flags")) used.insert(flag.get<std::string>());
    }
  }
  const auto& notes = vectors().at("notes");
  for (const auto& flag : used) {
    EXPECT_TRUE(notes.contains(flag)) << "flag without a note: " << flag;
  }
  for (const auto& [flag, _] : notes.items()) {
    EXPECT_TRUE(used.count(flag)) << "unused note: " << flag;
  }
}

TEST(LeanVectorsLint, ScalarsMatchTheirContext) {
  // binary32 values have 8 hex digits, binary64 16, rationals are num/den.
  const std::map<std::string, std::size_t> width = {{"binary32", 10}, {"binary64", 18}};
  std::size_t checked = 0;
  for (const auto& group : vectors().at("testGroups")) {
    for (const auto& test : group.at("tests")) {
      if (!test.contains("context")) continue;
      const std::string context = test.at("context");
      for (const char* field : {"scores", "logits", "exps", "probs", "gates", "combined", "x",
                                "bias", "keys", "groupScores", "sigmoid"}) {
        if (!test.contains(field)) continue;
        for (const auto& v : test.at(field)) {
          const std::string text = v.get<std::string>();
          if (context == "rational") {
            EXPECT_NO_THROW(ratFromText(text)) << describe(test);
          } else {
            EXPECT_EQ(text.size(), width.at(context)) << describe(test) << " " << field;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(LeanVectorsLint, ResultsHaveTheirReasons) {
  // invalid only for NaN scores, family parameters outside paramsValid and dispatch cases
  // outside dispatchValid (both flagged InvalidParams); acceptable only
  // where binary32 routing on probabilities differs from routing on logits (docs/design.md
  // §1 and §3).
  for (const auto& group : vectors().at("testGroups")) {
    for (const auto& test : group.at("tests")) {
      const std::string result = test.at("result");
      const auto& flags = test.at("flags");
      auto has = [&](const char* f) {
        return std::find(flags.begin(), flags.end(), f) != flags.end();
      };
      if (result == "invalid") {
        EXPECT_TRUE(has("NaN") || has("InvalidParams")) << describe(test);
      }
      if (result == "acceptable") {
        EXPECT_TRUE(has("Float32ProbabilityTie")) << describe(test);
      }
      if (has("NaN") || has("InvalidParams")) {
        EXPECT_EQ(result, "invalid") << describe(test);
      }
    }
  }
}

TEST(LeanVectorsLint, EveryDefinitionIsCovered) {
  // At least 2,000 tests, and every group (hence every definition of docs/design.md §1) present
  // with the edge cases the issue asks for.
  EXPECT_GE(vectors().at("numberOfTests").get<std::size_t>(), 2000u);
  std::map<std::string, std::size_t> perType;
  std::set<std::string> flags;
  for (const auto& group : vectors().at("testGroups")) {
    perType[group.at("type")] += group.at("tests").size();
    for (const auto& test : group.at("tests")) {
      for (const auto& f : test.at("flags")) flags.insert(f.get<std::string>());
    }
  }
  for (const char* type :
       {"RoutingTest", "RankTest", "SoftmaxTest", "GatesTest", "CombineTest", "ForwardTest",
        "PermuteTest", "CapacityTest", "SwitchCapacityTest", "BalanceTest", "ForwardProbsTest",
        "SoftmaxPermuteTest", "RouteScoresTest", "RouteGatesTest", "SigmoidTest", "DispatchTest"}) {
    EXPECT_GE(perType[type], 50u) << type;
  }
  for (const char* flag :
       {"ExactTie", "SignedZero", "Infinity", "Subnormal", "NearTie", "NonPowerOfTwoE", "KZero",
        "KEqualsE", "KAboveE", "NaN", "Float32ProbabilityTie", "NonFiniteRow", "SeedTheorem",
        "TieAtKeptBoundary", "InfiniteDisplacedExpert", "NearTieAtKeptBoundary"}) {
    EXPECT_TRUE(flags.count(flag)) << "no test flagged " << flag;
  }
  // The routing family's adversarial cases.
  for (const char* flag :
       {"GroupMaxTie", "GroupTop2SumTie", "GroupTieAtKeptBoundary", "BiasCancelsScoreDifference",
        "BiasOverturnsScoreOrder", "GroupsOfOne", "KAboveEligible", "MixtralParams",
        "SigmoidSaturates", "Llama4TopOne", "DeepSeekV3Shape"}) {
    EXPECT_TRUE(flags.count(flag)) << "no test flagged " << flag;
  }
}

}  // namespace
}  // namespace moe::lean
