// What a finding tells a kernel author, through the real command: every distinct fault is
// its own finding, the verdict configuration in force travels with the reproducer, and the
// counts are tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::readJsonFile;
using testing::runOracle;

std::string lib(const std::string& variant) {
  return std::string(MOE_LIB_DIR) + "/libmoe_peer_" + variant + ".so";
}

const nlohmann::json* findingOf(const nlohmann::json& run, const std::string& signature) {
  for (const auto& v : run["violations"]) {
    if (v["signature"] == signature) return &v;
  }
  return nullptr;
}

// A crash on E = 13 and an abort on every empty batch: two faults of kind crash, told apart
// by their tag (the signal) and by the empty batch being the abort's only shape. Neither
// hides the other, each keeps its own shrunk reproducer, and the crash on real shapes never
// shrinks into an empty batch.
TEST(Findings, EveryDistinctFaultIsReported) {
  const std::string out = freshDir("two-faults");
  const auto r = runOracle(
      "fuzz --json --keep-going --seconds 8 --seed 3 --experts 1-64 "
      "--call-timeout 2 --shrink-seconds 3 --impl " +
      lib("empty_abort_segv_e13") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 2u) << j["violations"];
  const auto* segv = findingOf(j, "moe-oracle: moe_peer_empty_abort_segv_e13-crash-SIGSEGV");
  const auto* abrt =
      findingOf(j, "moe-oracle: moe_peer_empty_abort_segv_e13-crash-SIGABRT-on-empty-batch");
  ASSERT_NE(segv, nullptr) << j["violations"];
  ASSERT_NE(abrt, nullptr) << j["violations"];
  EXPECT_EQ((*segv)["shape"]["experts"], 13);
  EXPECT_GE((*segv)["shape"]["tokens"].get<int>(), 1) << "shrunk into an empty batch";
  EXPECT_EQ((*abrt)["shape"]["tokens"], 0);
  EXPECT_EQ((*abrt)["shape"]["degenerate"], "empty-batch");
  EXPECT_NE((*segv)["reproducer"], (*abrt)["reproducer"]);
  for (const auto* v : {segv, abrt}) {
    const std::string file = (*v)["reproducer"];
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(readJsonFile(file)["testGroups"][0]["tests"][0]["signature"], (*v)["signature"]);
  }
  // The text summary says where the abort was seen.
  const auto text = runOracle(
      "fuzz --keep-going --seconds 8 --seed 3 --experts 1-64 "
      "--call-timeout 2 --shrink-seconds 3 --impl " +
          lib("empty_abort_segv_e13") + " --out " + out,
      /*withStderr=*/true);
  EXPECT_NE(text.out.find("in this run only on an empty batch (T = 0)"), std::string::npos)
      << text.out;
}

// Two crashes on real shapes, one by SIGSEGV (E = 13), one by SIGABRT (k = 3): one kind,
// two faults, told apart by the signal in the signature.
TEST(Findings, TwoCrashesByTwoSignalsAreTwoFindings) {
  const auto r = runOracle(
      "fuzz --json --keep-going --seconds 8 --seed 3 --experts 1-64 "
      "--call-timeout 2 --shrink-seconds 2 --impl " +
      lib("segv_e13_abort_k3") + " --out " + freshDir("two-signals"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(findingOf(j, "moe-oracle: moe_peer_segv_e13_abort_k3-crash-SIGSEGV"), nullptr)
      << j["violations"];
  EXPECT_NE(findingOf(j, "moe-oracle: moe_peer_segv_e13_abort_k3-crash-SIGABRT"), nullptr)
      << j["violations"];
}

// One unit: the verdicts count tokens (a violation is one token), the cases beside them.
TEST(Findings, CountsAreTokensWithTheCasesBeside) {
  const auto r = runOracle(
      "fuzz --json --keep-going --seconds 3 --seed 4 --experts 2-64 "
      "--tie-order lowest-index --shrink-seconds 1 --impl " +
      lib("tie_high_any") + " --out " + freshDir("counts"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& v = j["verdicts"];
  EXPECT_EQ(
      v["exact"].get<uint64_t>() + v["acceptable"].get<uint64_t>() + v["violation"].get<uint64_t>(),
      j["tokens"].get<uint64_t>())
      << j;
  EXPECT_GE(j["violation_cases"].get<uint64_t>(), j["violations"][0]["count"].get<uint64_t>());
  EXPECT_EQ(v["violation"].get<uint64_t>(), j["violation_cases"].get<uint64_t>())
      << "a token-kind violation is one token of one case";
}

// A tie found under --tie-order lowest-index against a contract that says "any": the run,
// its --json and its reproducer say lowest-index was in force, and replay and explain judge
// the reproducer that way without being told again (a flag still overrides).
TEST(Findings, TheTiePolicyInForceTravelsWithTheReproducer) {
  const std::string out = freshDir("tie-policy");
  const auto r = runOracle(
      "fuzz --json --seconds 10 --seed 1 --experts 2-64 "
      "--tie-order lowest-index --impl " +
      lib("tie_high_any") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict_config"]["tie_order"], "lowest-index");
  EXPECT_EQ(j["verdict_config"]["set_by_run"], nlohmann::json::array({"tie_order"}));
  const std::string file = j["violations"][0]["reproducer"];
  EXPECT_EQ(readJsonFile(file)["generatorVersion"],
            std::string("moe-oracle ") + MOE_ORACLE_VERSION);
  EXPECT_EQ(readJsonFile(file)["formatVersion"], 1) << "kVectorFormatVersion, the layout written";
  const auto test = readJsonFile(file)["testGroups"][0]["tests"][0];
  EXPECT_EQ(test["contract"]["tie_order"], "any") << "the router's own claim is kept";
  EXPECT_EQ(test["verdict_config"]["tie_order"], "lowest-index");

  const auto replay = runOracle("replay " + file, /*withStderr=*/true);
  EXPECT_EQ(replay.exitCode, 0) << replay.out;  // the recorded output is still that violation
  EXPECT_NE(replay.out.find("judged with tie order lowest-index"), std::string::npos) << replay.out;
  const auto rerun = runOracle("replay " + file + " --impl " + lib("tie_high_any"));
  EXPECT_EQ(rerun.exitCode, 1) << "the router still ties high under the policy of the run";
  const auto relaxed =
      runOracle("replay " + file + " --tie-order any --impl " + lib("tie_high_any"));
  EXPECT_EQ(relaxed.exitCode, 1) << "the recorded output is no longer a violation: a change";

  const auto explain = runOracle("explain " + file);
  EXPECT_EQ(explain.exitCode, 0);
  EXPECT_NE(explain.out.find("tie-higher-index"), std::string::npos) << explain.out;
  const auto explainAny = runOracle("explain " + file + " --tie-order any");
  EXPECT_EQ(explainAny.out.find("[tie-higher-index]"), std::string::npos) << explainAny.out;
}

// Kernels of one model's recipe, whose contracts say so in one word: every case is that
// recipe (or parameters outside the domain, which such a kernel must still refuse), so none
// abstains, and the coverage counts the recipe's tokens.
TEST(Findings, FixedRecipeKernelsAreFuzzedWithNoAbstention) {
  for (const std::string recipe : {"deepseek_v3", "llama4"}) {
    const auto r = runOracle("fuzz --json --seconds 3 --seed 5 --impl " + std::string(MOE_LIB_DIR) +
                             "/libmoe_recipe_" + recipe + ".so --out " + freshDir("recipe"));
    ASSERT_EQ(r.exitCode, 0) << recipe << "\n" << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["abstained"], 0) << recipe << ": " << j["coverage"];
    std::string name = recipe;
    std::replace(name.begin(), name.end(), '_', '-');
    const auto& recipes = j["coverage"]["recipes"];
    EXPECT_GT(recipes.value(name, uint64_t{0}), j["tokens"].get<uint64_t>() * 9 / 10) << recipes;
    EXPECT_EQ(recipes.size(), recipes.contains("none") ? 2u : 1u) << recipes;
  }
  // The same kernel told --family of another recipe abstains on everything: exit 3.
  const auto other = runOracle("fuzz --json --seconds 1 --seed 5 --family kimi-k2 --impl " +
                               std::string(MOE_LIB_DIR) + "/libmoe_recipe_llama4.so --out " +
                               freshDir("recipe-other"));
  EXPECT_EQ(other.exitCode, 3) << other.out;
}

// A kernel of one shape is reported at that shape: shrinking stays inside --experts and --k
// (it used to report E = 17, k = 2 for a run at E = 60, k = 4) and says what it shrank.
TEST(Findings, ShrinkingStaysInsideTheShapesAskedFor) {
  const auto r = runOracle(
      "fuzz --json --seconds 20 --seed 1 --experts 60 --k 4 --tokens 1-64 "
      "--tie-order lowest-index --impl " +
      lib("tie_high_any") + " --out " + freshDir("shape-kept"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto shape = nlohmann::json::parse(r.out)["violations"][0]["shape"];
  EXPECT_EQ(shape["experts"], 60) << shape;
  EXPECT_EQ(shape["k"], 4) << shape;
  EXPECT_GE(shape["tokens"].get<int>(), 1) << shape;
  EXPECT_EQ(shape["drawn"]["experts"], 60) << shape;
  EXPECT_EQ(shape["shrunk"], shape["drawn"]["tokens"] != shape["tokens"]) << shape;
}

// A position-dependent exp (gates of tied experts one ulp apart, the odd one ahead): the
// shrunk case still keeps both tied experts, so the reproducer shows the two gates that
// explain the order, not a bare "kept the higher index" at k = 1.
TEST(Findings, ShrinkingKeepsBothGatesOfATie) {
  // k = 1 is allowed: the tie met at k = 3 must not shrink to it.
  const auto r = runOracle("fuzz --json --seconds 20 --seed 4 --experts 2-32 --k 1,3 --impl " +
                           lib("tie_gates") + " --out " + freshDir("tie-gates"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto v = nlohmann::json::parse(r.out)["violations"][0];
  const auto test = readJsonFile(v["reproducer"])["testGroups"][0]["tests"][0];
  const int k = test["k"], t = test["token"], E = test["experts"];
  ASSERT_GE(k, 2) << test;
  std::vector<std::string> logits;
  for (const auto& x : test["logits"]) logits.push_back(x.dump());
  bool shown = false;
  for (int a = 0; a < k; ++a) {
    for (int b = a + 1; b < k; ++b) {
      const int i = test["ids"][t * k + a], j = test["ids"][t * k + b];
      if (i < 0 || j < 0) continue;
      shown = shown || (logits[t * E + i] == logits[t * E + j] &&
                        test["gates"][t * k + a] != test["gates"][t * k + b]);
    }
  }
  EXPECT_TRUE(shown) << test;
}

// A call far slower than the router's own cost predicts, which still returns, is slow: a
// note with its time and shape, not a violation, and the run passes.
TEST(Findings, ASlowCallIsANoteNotAHang) {
  const auto r = runOracle(
      "fuzz --json --seconds 8 --seed 1 --experts 30-40 --call-timeout 5 "
      "--impl " +
      lib("slow_e37") + " --out " + freshDir("slow"));
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["violations"].empty()) << j["violations"];
  EXPECT_GE(j["slow"]["calls"].get<int>(), 1) << j["slow"];
  EXPECT_EQ(j["slow"]["slowest_shape"]["experts"], 37) << j["slow"];
  EXPECT_GT(j["slow"]["slowest_seconds"].get<double>(), j["slow"]["slowest_budget"].get<double>());
}

// A correct router that spends O(E^2) a token, on the default shapes (E to 4,096, T to
// 65,536): never a hang; the draws its fitted cost says would end past the time limit are
// skipped and counted.
TEST(Findings, ANaiveRouterIsNeverAHang) {
  const auto r = runOracle("fuzz --json --seconds 10 --seed 1 --impl " + lib("quadratic") +
                           " --out " + freshDir("quadratic"));
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["violations"].empty()) << j["violations"];
  EXPECT_GT(j["skipped_too_slow"].get<int>(), 0) << j;
  EXPECT_GT(j["median_call_seconds"].get<double>(), 0);
}

// A kernel that refuses parameters outside the domain with EUNSUPPORTED (it looked at what it
// supports first) is told so: bad-params-wrong-status, the status as its tag.
TEST(Findings, EunsupportedBeforeTheDomainCheckIsAWrongStatus) {
  const auto r =
      runOracle("fuzz --json --seconds 5 --seed 1 --impl " + std::string(MOE_LIB_DIR) +
                "/libmoe_recipe_llama4_unsupported_first.so --out " + freshDir("wrong-status"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto v = nlohmann::json::parse(r.out)["violations"][0];
  EXPECT_EQ(v["kind"], "bad-params-wrong-status") << v;
  EXPECT_EQ(v["signature"], "moe-oracle: recipe-llama4-bad-params-wrong-status-4");
  const auto test = readJsonFile(v["reproducer"])["testGroups"][0]["tests"][0];
  EXPECT_NE(test["certificate"].get<std::string>().find("MOE_ROUTE_EUNSUPPORTED"),
            std::string::npos)
      << test["certificate"];
}

// The last token of a long batch reads the wrong row: the finding keeps the batch, and
// says that the row alone routes correctly.
TEST(Findings, ATokenWrongOnlyInItsBatchSaysSo) {
  const auto r = runOracle(
      "fuzz --json --seconds 20 --seed 1 --experts 2-8 --tokens 4096-4200 "
      "--impl " +
      lib("large_batch") + " --out " + freshDir("batch-only"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto v = nlohmann::json::parse(r.out)["violations"][0];
  const auto test = readJsonFile(v["reproducer"])["testGroups"][0]["tests"][0];
  EXPECT_GE(test["tokens"].get<int>(), 4096);
  EXPECT_NE(test["certificate"].get<std::string>().find("this row alone routes correctly (token " +
                                                        std::to_string(test["token"].get<int>()) +
                                                        " rerun as a batch of one)"),
            std::string::npos)
      << test["certificate"];
}

TEST(Findings, RecipeMistakesAreUsageErrors) {
  const std::string lib = std::string(MOE_LIB_DIR) + "/libmoe_recipe_llama4.so";
  const auto unknown = runOracle("fuzz --seconds 1 --family llama5 --impl " + lib, true);
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_NE(unknown.out.find("unknown recipe \"llama5\"; the recipes are deepseek-v3"),
            std::string::npos)
      << unknown.out;
  const auto outside =
      runOracle("fuzz --seconds 1 --family deepseek-v3 --experts 1-64 --impl " + lib, true);
  EXPECT_EQ(outside.exitCode, 2);
  EXPECT_NE(outside.out.find("recipe deepseek-v3 routes at E = 256, k = 8"), std::string::npos)
      << outside.out;
  const auto v1 = runOracle("fuzz --seconds 1 --family mixtral --impl spec32", true);
  EXPECT_EQ(v1.exitCode, 2);
  EXPECT_NE(v1.out.find("moe_route_v1, which has no routing family"), std::string::npos) << v1.out;
}

// --cases ends a run after that many cases, whichever of it and --seconds comes first, so a
// seed draws and judges the same cases on any machine however fast or loaded: two runs of
// one seed (one and two judging threads) agree on everything but their timings, through
// each door.
TEST(Findings, ACaseCountMakesARunTheSameOnAnyMachine) {
  const std::string dir = MOE_LIB_DIR;
  const struct {
    std::string impl;
    int cases;
  } doors[] = {{"scalar-probs", 120},
               {dir + "/libmoe_dispatch_eigen.so", 8},
               {dir + "/libmoe_layer_eigen.so", 4}};
  for (const auto& door : doors) {
    nlohmann::json runs[2];
    for (int jobs = 1; jobs <= 2; ++jobs) {
      const auto r =
          runOracle("fuzz --json --seed 7 --cases " + std::to_string(door.cases) +
                    " --seconds 600 --min-tokens 1 --jobs " + std::to_string(jobs) + " --impl " +
                    door.impl + " --out " + freshDir("cases-" + std::to_string(jobs)));
      ASSERT_EQ(r.exitCode, 0) << door.impl << ": " << r.out;
      runs[jobs - 1] = nlohmann::json::parse(r.out);
      EXPECT_EQ(runs[jobs - 1]["cases"], door.cases) << door.impl;
      for (const char* timing : {"seconds", "cases_per_s", "median_call_seconds"}) {
        runs[jobs - 1].erase(timing);
      }
    }
    EXPECT_EQ(runs[0], runs[1]) << door.impl;
  }
}

}  // namespace
}  // namespace moe::fuzz
