// The routing family end to end: the real moe-oracle fuzzes one moe_route_v2
// library per deliberate bug (tests/fuzz/broken_family/) and must name each by its exact
// kind (its hostile builds are judged with v1's in hostile_kernels_test.cpp); the correct
// library and every built-in router's v2 run clean; a v2 finding's reproducer replays.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/fuzz/router.hpp"
#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

std::string lib(const std::string& bug) {
  std::string file = bug;
  for (char& c : file) {
    if (c == '-') c = '_';
  }
  return std::string(MOE_LIB_DIR) + "/libmoe_broken_family_" + file + ".so";
}

struct FamilyBug {
  const char* name;
  const char* kind;
};

class BrokenFamily : public ::testing::TestWithParam<FamilyBug> {};

TEST_P(BrokenFamily, IsCaughtWithItsKind) {
  const FamilyBug bug = GetParam();
  ASSERT_TRUE(std::filesystem::exists(lib(bug.name))) << lib(bug.name);
  const std::string out = testing::freshDir(std::string("family-") + bug.name);
  // The first finding's kind is that of the first case the draw finds it on: seed 5's is
  // the named cause for every bug here. (On a few seeds, 1 and 3 of 1..10, renorm-eligible's
  // first case shrinks to equal scores in groups, where the cause cannot be told from the
  // numbers and the kind stays gate-error; scale-before-renorm's a negative scale's
  // gate-nonfinite on seeds 4 and 7.)
  const auto r = testing::runOracle("fuzz --impl " + lib(bug.name) +
                                    " --seconds 60 --seed 5 --json --out " + out);
  ASSERT_EQ(r.exitCode, 1) << "not caught: " << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u);
  EXPECT_EQ(j["violations"][0]["kind"], bug.kind) << r.out;
  EXPECT_EQ(j["violations"][0]["signature"],
            std::string("moe-oracle: broken-family-") + bug.name + "-" + bug.kind);
}

// Gate bugs no cause explains: an epsilon in the renormalising sum, a log-sum-exp that
// absorbs log(sum) (also on a kernel of scale 16 = E, where the numbers alone fit "the scale
// applied twice"), a random perturbation. Every gate finding of the run is gate-error, never
// a named cause the case contradicts (the log-sum-exp's wrong scores also misselect: those
// findings are selection kinds, rightly).
class UnexplainedGates : public ::testing::TestWithParam<const char*> {};

TEST_P(UnexplainedGates, AreGateErrorNeverAGuessedCause) {
  const std::string name = GetParam();
  const auto r = testing::runOracle("fuzz --impl " + lib(name) +
                                    " --seconds 20 --seed 3 --keep-going --shrink-seconds 2 "
                                    "--json --out " +
                                    testing::freshDir("family-" + name));
  ASSERT_EQ(r.exitCode, 1) << "not caught: " << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int gateFindings = 0;
  for (const auto& v : j["violations"]) {
    const std::string kind = v["kind"];
    if (kind.rfind("gate-", 0) != 0 || kind == "gate-nonfinite") continue;
    ++gateFindings;
    EXPECT_EQ(kind, "gate-error") << name << ": " << v;
  }
  EXPECT_GE(gateFindings, 1) << j["violations"];
}

// The issue's own case, by hand: E = 16 equal logits of 1e8, raw softmax at scale 16. The
// log-sum-exp absorbs log 16, so every gate is 16 times the exact 1: numerically "the scale
// applied twice" (16 x 16 / 16). The rerun at scale 3 (gates 3, not 9/16) tells them apart.
TEST(UnexplainedGates, AtScaleEqualToETheRerunTellsTheCoincidence) {
  nlohmann::json t = {
      {"tcId", 1},           {"tokens", 1},         {"experts", 16}, {"k", 2},
      {"threads", 1},        {"split", 0},          {"variant", 0},  {"allowNaN", false},
      {"result", "invalid"}, {"impl", "hand-made"}, {"token", 0}};
  t["logits"] = std::vector<std::string>(16, "0x4cbebc20");  // 1e8
  t["family"] = {{"score", 0},       {"groups", 1},      {"topk_groups", 1},
                 {"group_score", 0}, {"renormalize", 0}, {"scale", "0x41800000"}};
  const nlohmann::json file = {{"algorithm", "moe-topk-routing"},
                               {"schema", "moe_vectors_v1.schema.json"},
                               {"numberOfTests", 1},
                               {"testGroups", {{{"type", "RouterReproducer"}, {"tests", {t}}}}}};
  const std::string path = testing::freshDir("lse16") + ".json";
  std::ofstream(path) << file.dump();
  const auto r = testing::runOracle("explain " + path + " --impl " + lib("logsumexp-scale-e"));
  EXPECT_NE(r.out.find("violation [gate-error]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the numbers fit gate-scale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the rerun at scale 3 is judged gate-error"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(EveryBug, UnexplainedGates,
                         ::testing::Values("renorm-epsilon", "logsumexp", "perturbed",
                                           "logsumexp-scale-e"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n(info.param);
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

INSTANTIATE_TEST_SUITE_P(EveryBug, BrokenFamily,
                         ::testing::Values(FamilyBug{"bias-in-gates", "gate-bias"},
                                           FamilyBug{"group-max", "kept-group"},
                                           FamilyBug{"group-tie-high", "group-tie-order"},
                                           FamilyBug{"scale-before-renorm", "gate-scale"},
                                           FamilyBug{"renorm-eligible", "gate-renorm"}),
                         [](const ::testing::TestParamInfo<FamilyBug>& info) {
                           std::string n(info.param.name);
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// The same router without a bug: no finding (isolated, the default), including the
// invalid parameters the generator draws (EBADPARAMS, nothing written).
TEST(FamilyLibrary, TheCorrectRouterIsClean) {
  const auto r =
      testing::runOracle("fuzz --impl " + lib("correct") + " --seconds 8 --seed 4 --json --out " +
                         testing::freshDir("family-correct"));
  EXPECT_EQ(r.exitCode, 0) << r.out;
}

// Every built-in router's moe_route_v2, for a short run each, and spec32's.
TEST(FamilyBuiltins, EveryBuiltinV2IsClean) {
  std::vector<std::string> names = builtinRouterNames();
  names.push_back("spec32");
  for (const auto& name : names) {
    if (name != "spec32" && !builtinRouterAvailable(name)) continue;
    const auto r = testing::runOracle("fuzz --impl " + name +
                                      " --abi moe_route_v2 --seconds 2 --seed 5 --experts 1-300 "
                                      "--json --out " +
                                      testing::freshDir("family-" + name));
    EXPECT_EQ(r.exitCode, 0) << name << ": " << r.out;
  }
}

// `list --abi moe_route_v2` names each distinct v2 kernel once (an ISA's probs and logits
// routers share theirs), so a campaign does not fuzz one kernel twice.
TEST(FamilyBuiltins, ListNamesEachV2KernelOnce) {
  const auto all = testing::runOracle("list");
  const auto v2 = testing::runOracle("list --abi moe_route_v2");
  ASSERT_EQ(all.exitCode, 0) << all.out;
  ASSERT_EQ(v2.exitCode, 0) << v2.out;
  EXPECT_EQ(v2.out, "scalar-probs\navx2-probs\navx512-probs\nauto-probs\n");
  EXPECT_EQ(testing::runOracle("list --abi moe_route_v3", true).exitCode, 2);
  for (const auto& name : builtinRouterNamesV2()) {
    EXPECT_NE(all.out.find(name + "\n"), std::string::npos) << name << " is no router";
  }
}

// A v2 finding's reproducer carries the family and replays: the recorded output is still
// the recorded violation, and the correct library passes on it.
TEST(FamilyReproducer, RoundTrips) {
  const std::string out = testing::freshDir("family-reproducer");
  const auto r = testing::runOracle("fuzz --impl " + lib("bias-in-gates") +
                                    " --seconds 60 --seed 3 --json --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::string file = j["violations"][0]["reproducer"];
  std::ifstream in(file);
  const nlohmann::json rep = nlohmann::json::parse(in);
  EXPECT_NE(rep.dump().find("\"family\""), std::string::npos) << rep.dump();
  const auto replay = testing::runOracle("replay " + file, true);
  EXPECT_EQ(replay.exitCode, 0) << replay.out;
  const auto again = testing::runOracle("replay --impl " + lib("correct") + " " + file, true);
  EXPECT_EQ(again.exitCode, 0) << again.out;
  const auto still = testing::runOracle("replay --impl " + lib("bias-in-gates") + " " + file, true);
  EXPECT_NE(still.exitCode, 0) << still.out;
}

// The family's JSON object somewhere inside a reproducer file.
nlohmann::json familyOf(const nlohmann::json& j) {
  if (j.is_object() && j.contains("family") && j["family"].is_object()) return j["family"];
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (auto f = familyOf(v); !f.is_null()) return f;
    }
  }
  return nullptr;
}

// explain tells a v2 finding in the family's terms (the table report.cpp prints too): the
// parameters, each expert's score, bias and key, the groups' scores and which the spec
// keeps, and the certificate.
TEST(FamilyExplain, TellsGroupsBiasAndTheCertificate) {
  for (const char* bug : {"bias-in-gates", "group-max"}) {
    const std::string out = testing::freshDir(std::string("family-explain-") + bug);
    const auto r = testing::runOracle("fuzz --impl " + lib(bug) + " --seconds 60 --seed 3 --json " +
                                      "--out " + out);
    ASSERT_EQ(r.exitCode, 1) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const std::string file = j["violations"][0]["reproducer"];
    std::ifstream in(file);
    const nlohmann::json f = familyOf(nlohmann::json::parse(in));
    ASSERT_FALSE(f.is_null());
    const auto explain = testing::runOracle("explain " + file, true);
    ASSERT_EQ(explain.exitCode, 0) << explain.out;
    const std::string& text = explain.out;
    EXPECT_NE(text.find("family: "), std::string::npos) << text;
    EXPECT_NE(text.find("key s + b ~"), std::string::npos) << text;
    EXPECT_NE(text.find("gates of the router's kept set (unbiased scores"), std::string::npos)
        << text;
    EXPECT_NE(text.find(std::string("[") + j["violations"][0]["kind"].get<std::string>() + "]"),
              std::string::npos)
        << text;
    if (f.contains("bias") && !f["bias"].empty()) {  // each expert's bias, in hex
      EXPECT_NE(text.find(f["bias"][0].get<std::string>()), std::string::npos) << text;
    }
    if (f.value("groups", 1) > 1) {
      EXPECT_NE(text.find("exact group score ~"), std::string::npos) << text;
      EXPECT_NE(text.find("dropped"), std::string::npos) << text;
    }
    if (std::string(bug) == "group-max") {
      // Seed 3 draws E = 32 in 8 groups; the shrinker removes whole groups (E stays
      // divisible by G) down to the two the kept-group finding needs.
      EXPECT_EQ(f.value("groups", 1), 2) << f.dump();
    }
  }
}

}  // namespace
}  // namespace moe::fuzz
