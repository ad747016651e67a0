// --jobs: the tokens of a case judged on several threads give the same verdicts, counters,
// findings and summary as one thread, for the same seed (a case of many tokens is cut in
// chunks judged in any order and joined in token order up to the first violation).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/test/seed.hpp"

namespace moe::fuzz {
namespace {

bool sameLevels(const LevelCounters& a, const LevelCounters& b) {
  return a.firstLevel == b.firstLevel && a.selectionFloat == b.selectionFloat &&
         a.selectionDouble == b.selectionDouble && a.selectionCertified == b.selectionCertified &&
         a.selectionUndecided == b.selectionUndecided && a.gateDouble == b.gateDouble &&
         a.gateCertified == b.gateCertified && a.gateUndecided == b.gateUndecided;
}

// Cases of up to 700 tokens (eleven chunks), some with one token's gate spoiled so that the
// violation falls in a chunk other than the first.
TEST(Jobs, CaseVerdictsAndCountersDoNotDependOnThreads) {
  registerBrokenRouters();
  std::mt19937_64 rng(test::testSeed());
  for (const char* name : {"spec32", "broken-tie-high", "broken-no-renorm"}) {
    const auto router = openRouter(name);
    SeededSource source(test::testSeed());
    ShapeSpace shapes;
    shapes.experts = IntSet::range(1, 80);
    shapes.tokens = IntSet::range(100, 700);
    shapes.tokensGiven = true;
    for (int i = 0; i < 40; ++i) {
      const Case c = routerCase(source, router->contract(), shapes);
      RouteOutput out = router->route(c.tokens, c.experts, c.k, c.logits, c.threads, nullptr);
      if (out.fault || out.abstained) continue;
      if (i % 2 == 1 && c.k > 0 && c.tokens > 0 && c.experts > 0) {
        out.gates[(rng() % static_cast<size_t>(c.tokens)) * static_cast<size_t>(c.k)] *= 3.0f;
      }
      std::vector<CaseResult> results;
      std::vector<LevelCounters> levels(3);
      for (int jobs : {1, 2, 3}) {
        VerdictConfig config;
        config.jobs = jobs;
        results.push_back(judgeRecorded(c, out.ids, out.gates, router->contract(), config,
                                        levels[static_cast<size_t>(jobs - 1)]));
      }
      for (size_t j = 1; j < 3; ++j) {
        const std::string at =
            std::string(name) + " case " + std::to_string(i) + " jobs " + std::to_string(j + 1);
        ASSERT_EQ(results[j].tokens.size(), results[0].tokens.size()) << at;
        ASSERT_EQ(results[j].violation.has_value(), results[0].violation.has_value()) << at;
        for (size_t t = 0; t < results[0].tokens.size(); ++t) {
          const Verdict &a = results[0].tokens[t], &b = results[j].tokens[t];
          ASSERT_TRUE(a.outcome == b.outcome && a.reason == b.reason && a.kind == b.kind &&
                      a.certificate == b.certificate && a.token == b.token && a.margin == b.margin)
              << at << " token " << t;
        }
        EXPECT_TRUE(sameLevels(levels[0], levels[j])) << at;
      }
    }
  }
}

// A whole run: the --json summary (but its clock) and every finding the same for 1 and 3
// threads, on the binary32 spec (every token judged) and on a router with a bug under
// --keep-going (a finding in many cases).
nlohmann::json campaignAt(const Router& router, int jobs) {
  CampaignOptions o;
  o.seconds = 600;
  o.maxCases = 300;
  o.seed = test::testSeed();
  o.keepGoing = true;
  o.shrinkSeconds = 0;  // shrinking is time-capped: left out so that nothing is timed
  o.progress = false;
  o.outDir = (std::filesystem::temp_directory_path() /
              ("moe-jobs-test-" + router.name() + "-" + std::to_string(jobs)))
                 .string();
  std::filesystem::remove_all(o.outDir);
  std::filesystem::create_directories(o.outDir);
  o.shapes.experts = IntSet::range(1, 300);
  o.shapes.tokens = IntSet::range(0, 400);
  o.shapes.tokensGiven = true;
  o.config.jobs = jobs;
  nlohmann::json j = summaryJSON(runCampaign(router, o));
  for (const char* clock : {"seconds", "cases_per_s", "median_call_seconds", "slow"}) {
    j.erase(clock);
  }
  for (auto& v : j["violations"]) v.erase("reproducer");  // the folder differs
  return j;
}

TEST(Jobs, CampaignSummaryDoesNotDependOnThreads) {
  registerBrokenRouters();
  const auto spec = openRouter("spec32");
  const nlohmann::json clean = campaignAt(*spec, 1);
  EXPECT_GT(clean["tokens"].get<uint64_t>(), 3000u);
  EXPECT_EQ(clean.dump(2), campaignAt(*spec, 3).dump(2));
  const auto broken = openRouter("broken-tie-high");
  const nlohmann::json found = campaignAt(*broken, 1);
  EXPECT_FALSE(found["violations"].empty());
  EXPECT_EQ(found.dump(2), campaignAt(*broken, 3).dump(2));
}

}  // namespace
}  // namespace moe::fuzz
