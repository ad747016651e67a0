// The real-kernels work, end to end through the moe-oracle binary: a tie policy
// for kernels that promise no tie order, keep-going with one line per kind, shrinking to
// the few experts a bug needs, one signature per bug over seeds, shape flags for a kernel
// that supports one shape, batches of 4,096 tokens and more, and exit 3 when too little
// was judged. The routers are tests/fuzz/routers/peer_router.c, one library per variant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

std::string lib(const std::string& name) {
  const std::string path = std::string(MOE_LIB_DIR) + "/lib" + name + ".so";
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  return path;
}

nlohmann::json fuzzJSON(const std::string& args, int expectedExit) {
  const auto r = runOracle("fuzz --json " + args);
  EXPECT_EQ(r.exitCode, expectedExit) << args << "\n" << r.out;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not one JSON object: " << e.what() << "\n" << r.out;
    return nlohmann::json::object();
  }
}

TEST(TiePolicy, AnyAcceptsTiesThatLowestIndexRejects) {
  const std::string router = lib("moe_peer_tie_high_any");
  // As the contract says: ties in either order are acceptable, and counted as such.
  auto j = fuzzJSON("--impl " + router + " --seconds 4 --seed 7 --out " + freshDir("any"), 0);
  EXPECT_EQ(j["verdicts"]["violation"], 0);
  EXPECT_GT(j["acceptable_reasons"].value("tie-order", 0), 0) << j["acceptable_reasons"];
  // The spec's policy from the command line: the same router is a tie violation.
  j = fuzzJSON("--impl " + router + " --seconds 20 --seed 7 --tie-order lowest-index --out " +
                   freshDir("lowest"),
               1);
  ASSERT_EQ(j["violations"].size(), 1u);
  EXPECT_EQ(j["violations"][0]["kind"], "tie-higher-index");
}

TEST(KeepGoing, TwoPlantedBugsAreTwoKindsEachReportedOnce) {
  auto j = fuzzJSON("--impl " + lib("moe_peer_two_bugs") +
                        " --keep-going --seconds 15 --seed 3 --shrink-seconds 2 --out " +
                        freshDir("two-bugs"),
                    1);
  std::set<std::string> kinds;
  for (const auto& v : j["violations"]) {
    EXPECT_TRUE(kinds.insert(v["kind"].get<std::string>()).second) << "reported twice: " << v;
    EXPECT_GE(v["count"].get<int>(), 1);
    EXPECT_TRUE(std::filesystem::exists(v["reproducer"].get<std::string>())) << v;
  }
  EXPECT_TRUE(kinds.count("tie-higher-index")) << j["violations"];
  EXPECT_TRUE(kinds.count("gate-error")) << j["violations"];
  EXPECT_GT(j["tokens"].get<int64_t>(), 1000) << "keep-going must go on judging";
}

TEST(Shrinking, ATieBugShrinksToAFewExpertsWithOneSignatureOverSeeds) {
  std::set<std::string> signatures;
  for (int seed = 1; seed <= 5; ++seed) {
    auto j = fuzzJSON("--impl " + lib("moe_broken_tie_high") + " --seconds 30 --seed " +
                          std::to_string(seed) + " --out " + freshDir("shrink"),
                      1);
    ASSERT_EQ(j["violations"].size(), 1u) << j;
    const auto& v = j["violations"][0];
    signatures.insert(v["signature"].get<std::string>());
    EXPECT_LE(v["shape"]["experts"].get<int>(), 4) << "seed " << seed << ": " << v;
    EXPECT_LE(v["shape"]["k"].get<int>(), 2) << "seed " << seed << ": " << v;
    EXPECT_EQ(v["shape"]["tokens"].get<int>(), 1) << "seed " << seed << ": " << v;
    // The reproducer holds the shrunk case, variant included, and replays as its kind.
    const auto file =
        nlohmann::json::parse(std::ifstream(v["reproducer"].get<std::string>()), nullptr, false);
    ASSERT_FALSE(file.is_discarded());
    const auto& test = file["testGroups"][0]["tests"][0];
    EXPECT_TRUE(test.contains("variant"));
    EXPECT_EQ(test["experts"], v["shape"]["experts"]);
  }
  EXPECT_EQ(signatures, std::set<std::string>{"moe-oracle: moe_broken_tie_high-tie-higher-index"});
}

TEST(Shapes, AKernelOfOneShapeIsJudgedAtThatShape) {
  auto j = fuzzJSON("--impl " + lib("moe_peer_shape_256_8") +
                        " --experts 256 --k 8 --seconds "
                        "10 --seed 1 --out " +
                        freshDir("shape"),
                    0);
  // A floor far below the rate on an idle machine: this asserts that the shape is drawn,
  // not a speed (speed lives in bench/), so a loaded machine must not fail it.
  EXPECT_GT(j["tokens"].get<int64_t>(), 10000) << "judged in 10 s";
  EXPECT_EQ(j["abstained"], 0) << "nothing drawn outside the shape";
  EXPECT_EQ(j["coverage"]["experts"].size(), 1u) << j["coverage"];
  EXPECT_GT(j["coverage"]["experts"].value("65-256", 0), 0) << j["coverage"];
  // The contract's own "shapes" field draws the same without the flags.
  j = fuzzJSON("--impl " + lib("moe_peer_shape_256_8") + " --seconds 3 --seed 2 --out " +
                   freshDir("shape-contract"),
               0);
  EXPECT_EQ(j["abstained"], 0);
}

TEST(Shapes, ARouterWrongOnlyOnLargeBatchesIsCaught) {
  auto j = fuzzJSON("--impl " + lib("moe_peer_large_batch") + " --seconds 60 --seed 11 --out " +
                        freshDir("large-batch"),
                    1);
  ASSERT_EQ(j["violations"].size(), 1u) << j;
  EXPECT_GE(j["violations"][0]["shape"]["tokens"].get<int>(), 4096)
      << "shrinking must keep the batch the bug needs";
  EXPECT_LT(j["seconds"].get<double>(), 75.0);
  // The same router is clean on the small batches the old generator drew.
  fuzzJSON("--impl " + lib("moe_peer_large_batch") +
               " --tokens 1-4095 --seconds 3 --seed 11 "
               "--out " +
               freshDir("small-batch"),
           0);
}

TEST(Coverage, ARouterThatAbstainsOnEverythingIsNotAPass) {
  auto j = fuzzJSON("--impl " + lib("moe_peer_abstain_all") + " --seconds 1 --seed 1 --out " +
                        freshDir("abstain"),
                    3);
  EXPECT_EQ(j["tokens"], 0);
  EXPECT_TRUE(j["coverage"]["insufficient"].get<bool>());
  EXPECT_GT(j["coverage"]["abstain_reasons"].value("returned 4", 0), 0) << j["coverage"];
  // Too few tokens for --min-tokens is exit 3 as well.
  fuzzJSON(
      "--impl spec32 --seconds 1 --seed 1 --min-tokens 1000000000 --out " + freshDir("min-tokens"),
      3);
}

TEST(Replay, PrintsTheCertificateAndExplainRerunsTheRouterAskedFor) {
  const std::string out = freshDir("replay");
  auto j =
      fuzzJSON("--impl " + lib("moe_broken_tie_high") + " --seconds 30 --seed 2 --out " + out, 1);
  ASSERT_EQ(j["violations"].size(), 1u);
  const std::string file = j["violations"][0]["reproducer"];
  auto r = runOracle("replay " + file + " --impl " + lib("moe_broken_tie_high") + " --json");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  const auto replay = nlohmann::json::parse(r.out);
  const auto& failure = replay["files"][0]["failures"][0];
  EXPECT_EQ(failure["kind"], "tie-higher-index");
  EXPECT_NE(failure["certificate"].get<std::string>().find("tie exactly"), std::string::npos);
  // explain --impl reruns that router: spec32 gets it right, so no violation is told.
  r = runOracle("explain " + file + " --impl spec32");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("spec32 (rerun now)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[tie-higher-index]"), std::string::npos) << r.out;
  r = runOracle("explain " + file);
  EXPECT_NE(r.out.find("[tie-higher-index]"), std::string::npos) << r.out;
}

TEST(CommandLine, ShapeFlagsAreChecked) {
  EXPECT_EQ(runOracle("fuzz --impl spec32 --experts 0-5000 --seconds 1").exitCode, 2);
  EXPECT_EQ(runOracle("fuzz --impl spec32 --experts 8-4 --seconds 1").exitCode, 2);
  EXPECT_EQ(runOracle("fuzz --impl spec32 --tokens abc --seconds 1").exitCode, 2);
  EXPECT_EQ(runOracle("fuzz --impl spec32 --tie-order highest --seconds 1").exitCode, 2);
  const auto r = runOracle("fuzz --impl spec32 --experts 4096 --tokens 65536 --seconds 1", true);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("no case fits"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moe::fuzz
