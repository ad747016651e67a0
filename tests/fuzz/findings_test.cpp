// What a finding tells a kernel author, through the real command: every distinct fault is
// its own finding, the verdict configuration in force travels with the reproducer, and the
// counts are tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

std::string lib(const std::string& variant) {
  return std::string(MOE_LIB_DIR) + "/libmoe_peer_" + variant + ".so";
}

nlohmann::json readJSON(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
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
    EXPECT_EQ(readJSON(file)["testGroups"][0]["tests"][0]["signature"], (*v)["signature"]);
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
  const auto test = readJSON(file)["testGroups"][0]["tests"][0];
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

}  // namespace
}  // namespace moe::fuzz
