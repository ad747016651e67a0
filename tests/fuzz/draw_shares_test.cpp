// Where the default draw spends the judged tokens (docs/fuzz.md, "Shapes and batch sizes",
// "Coverage"): at least 60% at the shapes of today's models, at most 10% on degenerate shapes
// and at most 10% on non-real rows, model-like logits beside adversarial ones, as the
// campaign's own --json coverage reports them; and a kernel's shapes (its contract, the
// flags) still bound every case drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/model_logits.hpp"
#include "moe/fuzz/model_shapes.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"

namespace moe::fuzz {
namespace {

CampaignSummary campaign(const std::string& router, const ShapeSpace& shapes, uint64_t cases) {
  auto r = openRouter(router);
  EXPECT_NE(r, nullptr) << router;
  CampaignOptions o;
  o.seconds = 1e6;  // the case count ends the run: the same cases on any machine
  o.maxCases = cases;
  o.seed = 35;
  o.shapes = shapes;
  o.shrinkSeconds = 0;
  o.progress = false;
  o.outDir = (std::filesystem::temp_directory_path() / "moe-oracle-test-draw-shares").string();
  return runCampaign(*r, o);
}

TEST(DrawShares, TheDefaultDrawMeetsItsSharesInTheJsonCoverage) {
  const CampaignSummary s = campaign("scalar-logits", ShapeSpace{}, 1000);
  const nlohmann::json j = summaryJSON(s);
  ASSERT_EQ(j["violations"].size(), 0u) << j["violations"];
  const nlohmann::json& cov = j["coverage"];
  const nlohmann::json& shares = cov["shares"];
  std::printf("shares of %llu tokens judged in %llu cases: %s\n",
              static_cast<unsigned long long>(s.tokens), static_cast<unsigned long long>(s.cases),
              shares.dump().c_str());
  ASSERT_GT(j["tokens"].get<uint64_t>(), 100000u);
  EXPECT_GE(shares["model_shapes"].get<double>(), 0.60) << cov;
  EXPECT_LE(shares["degenerate"].get<double>(), 0.10) << cov;
  EXPECT_LE(shares["nonreal"].get<double>(), 0.10) << cov;
  // Degenerate shapes are still drawn in every run, model-like and adversarial logits both.
  EXPECT_GE(cov["degenerate_cases"].get<uint64_t>(), 5u) << cov;
  EXPECT_GE(shares["model_like"].get<double>(), 0.1) << cov;
  EXPECT_GE(shares["adversarial"].get<double>(), 0.1) << cov;
  // The tokens behind the fractions: the two logit styles split every token judged.
  const nlohmann::json& tokens = cov["share_tokens"];
  EXPECT_EQ(tokens["model_like"].get<uint64_t>() + tokens["adversarial"].get<uint64_t>(),
            j["tokens"].get<uint64_t>());
  EXPECT_EQ(tokens["nonreal"].get<uint64_t>(), j["acceptable_reasons"].value("nonreal-row", 0));
  EXPECT_NEAR(shares["model_shapes"].get<double>(),
              static_cast<double>(tokens["model_shapes"].get<uint64_t>()) /
                  static_cast<double>(j["tokens"].get<uint64_t>()),
              1e-12);
  // The console's summary says the same.
  EXPECT_NE(summaryText(s).find("shares of tokens judged: model shapes"), std::string::npos);
}

// The shape classes as the issue defines them, at their edges.
TEST(DrawShares, ShapeClassesAtTheirEdges) {
  EXPECT_TRUE(isModelShape(8, 1, 16));
  EXPECT_TRUE(isModelShape(512, 10, 65536));
  EXPECT_FALSE(isModelShape(7, 2, 16));
  EXPECT_FALSE(isModelShape(513, 8, 16));
  EXPECT_FALSE(isModelShape(256, 11, 16));
  EXPECT_FALSE(isModelShape(256, 0, 16));
  EXPECT_FALSE(isModelShape(256, 8, 15));
  EXPECT_TRUE(isDegenerateShape(1, 1, 4));
  EXPECT_TRUE(isDegenerateShape(0, 0, 4));
  EXPECT_TRUE(isDegenerateShape(8, 0, 4));
  EXPECT_TRUE(isDegenerateShape(8, 9, 4));
  EXPECT_TRUE(isDegenerateShape(8, 2, 0));
  EXPECT_FALSE(isDegenerateShape(2, 2, 1));
  for (const ModelShape& m : modelShapes()) {
    EXPECT_TRUE(isModelShape(m.experts, m.k, 16)) << m.models;
    EXPECT_TRUE(modelExpertSizes().contains(m.experts)) << m.models;
  }
  for (int64_t e : {8, 9, 16, 17, 31, 44, 59, 61, 63, 127, 144, 176, 240, 257, 368, 400, 496, 511})
    EXPECT_TRUE(modelExpertSizes().contains(e)) << e;
  EXPECT_FALSE(modelExpertSizes().contains(7));
  EXPECT_FALSE(modelExpertSizes().contains(100));
  EXPECT_FALSE(modelExpertSizes().contains(528));
}

// A kernel that supports only E = 4 gets every case at E = 4: no model shape fits, so the
// draw gives way to the shapes the space holds, through the contract and through the flags.
TEST(DrawShares, AKernelsShapesWinOverTheDefaultShares) {
  const Contract contract = parseContract(R"({"abi":"moe_route_v1","shapes":{"experts":[4]}})");
  const ShapeSpace fromContract = shapeSpaceFor(contract.shapes, "", "", "", "--");
  const ShapeSpace fromFlags = shapeSpaceFor({}, "4", "", "", "--");
  for (const ShapeSpace* space : {&fromContract, &fromFlags}) {
    SeededSource src(4);
    int large = 0;
    for (int i = 0; i < 2000; ++i) {
      const Case c = routerCase(src, contract, *space);
      ASSERT_EQ(c.experts, 4) << i;
      ASSERT_LE(c.k, 6) << i;
      large += c.tokens > 64 ? 1 : 0;
    }
    EXPECT_GT(large, 40) << "the space's E = 4 still gets large batches";
  }
  // Explicit flags at a model's shape: every case there, none elsewhere.
  const ShapeSpace deepseek = shapeSpaceFor({}, "256", "8", "1-4096", "--");
  SeededSource src(5);
  int modelShaped = 0;
  for (int i = 0; i < 500; ++i) {
    const Case c = drawCase(src, deepseek);
    ASSERT_EQ(c.experts, 256);
    ASSERT_EQ(c.k, 8);
    ASSERT_GE(c.tokens, 1);
    ASSERT_LE(c.tokens, 4096);
    modelShaped += isModelShape(c.experts, c.k, c.tokens) ? 1 : 0;
  }
  EXPECT_GT(modelShaped, 250);
  // A space of degenerate shapes only (E = 1) is drawn there, with batches of every size.
  const ShapeSpace one = shapeSpaceFor({}, "1", "", "", "--");
  int oneLarge = 0;
  for (int i = 0; i < 1000; ++i) {
    const Case c = drawCase(src, one);
    ASSERT_EQ(c.experts, 1);
    oneLarge += c.tokens > 64 ? 1 : 0;
  }
  EXPECT_GT(oneLarge, 20);
}

// The same through the campaign: a run at E = 4 judges every token at E = 4 and reports no
// token at a model shape; --experts 256 --k 8 --tokens 16-512 reports every token there.
TEST(DrawShares, TheCampaignReportsTheSharesOfARestrictedSpace) {
  const CampaignSummary four = campaign("scalar-logits", shapeSpaceFor({}, "4", "", "", "--"), 200);
  nlohmann::json j = summaryJSON(four);
  EXPECT_GT(four.tokens, 0u);
  EXPECT_EQ(j["coverage"]["experts"].value("2-8", 0), j["tokens"].get<uint64_t>());
  EXPECT_EQ(j["coverage"]["shares"]["model_shapes"].get<double>(), 0.0);
  const CampaignSummary model =
      campaign("scalar-logits", shapeSpaceFor({}, "256", "8", "16-512", "--"), 50);
  j = summaryJSON(model);
  EXPECT_EQ(j["coverage"]["shares"]["model_shapes"].get<double>(), 1.0) << j["coverage"];
  EXPECT_EQ(j["coverage"]["shares"]["degenerate"].get<double>(), 0.0) << j["coverage"];
}

// Model-like logits: real rows (finite), spread like a router's, some rows with an exact tie
// where the routing is decided, some cases rounded as bf16.
TEST(DrawShares, ModelLikeLogitsAreFiniteWithPlantedAndRoundedTies) {
  SeededSource src(9);
  int tiedRows = 0, rows = 0, bf16Cases = 0;
  for (int n = 0; n < 200; ++n) {
    Case c;
    c.experts = 64;
    c.k = 8;
    c.tokens = 32;
    c.modelLike = true;
    drawLogits(src, c);
    ASSERT_EQ(c.logits.size(), 64u * 32u);
    bool bf16 = true;
    for (float x : c.logits) {
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_LT(std::fabs(x), 200.0f);
      uint32_t b = 0;
      std::memcpy(&b, &x, sizeof b);
      bf16 = bf16 && (b & 0xffffu) == 0;
    }
    bf16Cases += bf16 ? 1 : 0;
    for (int32_t t = 0; t < c.tokens; ++t) {
      std::vector<float> row(c.row(t).begin(), c.row(t).end());
      std::sort(row.begin(), row.end(), std::greater<>());
      tiedRows += row[7] == row[8] ? 1 : 0;
      ++rows;
    }
  }
  EXPECT_GT(bf16Cases, 20);
  EXPECT_GT(tiedRows, rows / 20);  // an exact tie planted at the k-th best in 1 row in 8
  EXPECT_LT(tiedRows, rows / 2);   // most rows as drawn
}

// Every case of a space lies inside it, whatever the space (the kinds give way in turn).
TEST(DrawShares, EveryCaseLiesInsideAnySpace) {
  const char* experts[] = {"0", "1", "0-1", "2", "4", "7-9", "1-64", "256", "513-600"};
  const char* ks[] = {"", "0", "1", "8", "11-20", "3,9"};
  const char* tokens[] = {"", "0", "1", "0-3", "16", "1-64", "4096-4200"};
  SeededSource src(17);
  for (const char* e : experts) {
    for (const char* k : ks) {
      for (const char* t : tokens) {
        const bool wide = std::string(e) == "256" || std::string(e) == "513-600";
        if (wide && std::string(t) == "4096-4200") continue;  // 2^21 logits a case: kept cheap
        ShapeSpace space;
        try {
          space = shapeSpaceFor({}, e, k, t, "--");
        } catch (const std::invalid_argument&) {
          continue;  // no case fits (4,096 experts of 4,096 tokens)
        }
        for (int i = 0; i < 20; ++i) {
          const Case c = drawCase(src, space);
          ASSERT_TRUE(space.experts.contains(c.experts)) << e << " " << k << " " << t;
          ASSERT_TRUE(space.k.empty() || space.k.contains(c.k)) << e << " " << k << " " << t;
          ASSERT_TRUE(space.tokens.contains(c.tokens)) << e << " " << k << " " << t;
          ASSERT_LE(int64_t{c.tokens} * c.experts, kDrawMaxLogits);
          ASSERT_EQ(c.logits.size(), static_cast<size_t>(c.tokens) * c.experts);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moe::fuzz
