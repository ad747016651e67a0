// Vector I/O: a reproducer written by the campaign replays (its recorded output is still
// the recorded violation), RoutingTest groups are checked against the oracle, unknown
// group types are skipped with a message, and explain tells the case.
#include "moe/fuzz/vectors.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/report.hpp"

namespace moe::fuzz {
namespace {

nlohmann::json routingFile(nlohmann::json test) {
  return {{"algorithm", "moe-topk-routing"},
          {"numberOfTests", 1},
          {"testGroups", {{{"type", "RoutingTest"}, {"tests", {test}}}}}};
}

nlohmann::json tieTest() {
  // logits [1, 1, 0.5]: ranks 0,1,2; k = 2 keeps [0, 1].
  return {{"tcId", 1},
          {"result", "valid"},
          {"k", 2},
          {"logits", {hex32(1.0f), hex32(1.0f), hex32(0.5f)}},
          {"ranks", {0, 1, 2}},
          {"keptExperts", {0, 1}}};
}

TEST(VectorReplay, RoutingTestAgreesWithTheOracle) {
  ReplaySummary s = replayVectors(routingFile(tieTest()), nullptr, VerdictConfig{});
  EXPECT_EQ(s.passed, 1);
  EXPECT_EQ(s.failed, 0);
}

TEST(VectorReplay, TamperedKeptExpertsFail) {
  nlohmann::json t = tieTest();
  t["keptExperts"] = {1, 0};
  ReplaySummary s = replayVectors(routingFile(t), nullptr, VerdictConfig{});
  EXPECT_EQ(s.failed, 1);
}

TEST(VectorReplay, RoutingTestAgainstRouters) {
  auto spec = makeSpec32Router();
  EXPECT_EQ(replayVectors(routingFile(tieTest()), spec.get(), VerdictConfig{}).failed, 0);
  registerBrokenRouters();
  auto broken = openRouter("broken-tie-high");
  EXPECT_EQ(replayVectors(routingFile(tieTest()), broken.get(), VerdictConfig{}).failed, 1);
}

TEST(VectorReplay, SuppliedExpsReproduceProbs) {
  nlohmann::json t = tieTest();
  // exps32 of [1, 1, 0.5] with m = 1: expf(0), expf(0), expf(-0.5).
  float e2 = std::exp(-0.5f);
  float d = (0.0f + 1.0f) + 1.0f + e2;
  t["exps32"] = {hex32(1.0f), hex32(1.0f), hex32(e2)};
  t["probs32"] = {hex32(1.0f / d), hex32(1.0f / d), hex32(e2 / d)};
  EXPECT_EQ(replayVectors(routingFile(t), nullptr, VerdictConfig{}).failed, 0);
  t["probs32"][2] = hex32(nextUp(e2 / d));
  EXPECT_EQ(replayVectors(routingFile(t), nullptr, VerdictConfig{}).failed, 1);
}

TEST(VectorReplay, UnknownGroupsAreSkippedAndSaid) {
  nlohmann::json f = routingFile(tieTest());
  f["testGroups"].push_back({{"type", "SoftmaxTest"}, {"tests", {{{"tcId", 1}}}}});
  ReplaySummary s = replayVectors(f, nullptr, VerdictConfig{});
  EXPECT_EQ(s.skipped, 1);
  ASSERT_FALSE(s.lines.empty());
  EXPECT_NE(s.lines.back().find("SoftmaxTest"), std::string::npos);
  EXPECT_THROW(checkVectorLayout(nlohmann::json::array()), std::invalid_argument);
  EXPECT_THROW(checkVectorLayout({{"testGroups", {{{"tests", {}}}}}}), std::invalid_argument);
}

TEST(VectorReplay, CampaignReproducerReplaysAsItsViolation) {
  registerBrokenRouters();
  auto broken = openRouter("broken-no-renorm");
  CampaignOptions o;
  o.seconds = 20;
  o.seed = 5;
  o.outDir = (std::filesystem::temp_directory_path() / "moe-fuzz-vectors-test").string();
  o.progress = false;
  CampaignSummary s = runCampaign(*broken, o);
  ASSERT_EQ(s.violations.size(), 1u);
  EXPECT_EQ(kindName(s.violations[0].kind), "gate-error");
  EXPECT_NE(s.violations[0].report.find("moe-oracle: broken-no-renorm-gate-error\n"),
            std::string::npos);
  nlohmann::json file = loadVectorFile(s.violations[0].reproducer);
  // Re-judged without the router: still the recorded violation, so it passes as a vector.
  ReplaySummary r = replayVectors(file, nullptr, VerdictConfig{});
  EXPECT_EQ(r.failed, 0) << (r.lines.empty() ? "" : r.lines[0]);
  // Run against the broken router again: it still violates.
  EXPECT_EQ(replayVectors(file, broken.get(), VerdictConfig{}).failed, 1);
  // And a correct router passes it.
  auto spec = makeSpec32Router();
  EXPECT_EQ(replayVectors(file, spec.get(), VerdictConfig{}).failed, 0);
  std::string text = explainVectors(file, nullptr, VerdictConfig{});
  EXPECT_NE(text.find("gate-error"), std::string::npos);
  EXPECT_NE(text.find("exact gate"), std::string::npos);
}

TEST(VectorLoad, BadFilesGiveClearErrors) {
  EXPECT_THROW(loadVectorFile("/nonexistent/file.json"), std::runtime_error);
  EXPECT_THROW(parseRoutingTest({{"k", 1}, {"logits", {"0xzz"}}}), std::invalid_argument);
  EXPECT_THROW(parseRoutingTest({{"k", -1}, {"logits", {"0x00000000"}}}), std::invalid_argument);
  EXPECT_THROW(caseOfReproducer({{"tokens", 1}}), std::invalid_argument);
}

}  // namespace
}  // namespace moe::fuzz
