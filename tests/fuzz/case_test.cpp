// The case model: decoding always yields a valid case within the issue's limits, encoding
// round-trips bit for bit, JSON round-trips, and bad JSON is rejected with a reason.
#include "moe/fuzz/case.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <vector>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/mutate.hpp"
#include "moe/test/seed.hpp"

namespace moe::fuzz {
namespace {

void expectValid(const Case& c) {
  ASSERT_GE(c.experts, 1);
  ASSERT_LE(c.experts, kMaxExperts);
  ASSERT_GE(c.k, 0);
  ASSERT_LE(c.k, c.experts + 1);
  ASSERT_GE(c.tokens, 1);
  ASSERT_LE(c.tokens, kMaxTokens);
  ASSERT_LE(c.tokens * c.experts, std::max(kMaxLogits, c.experts));
  ASSERT_EQ(c.logits.size(), static_cast<size_t>(c.tokens) * c.experts);
  ASSERT_GE(c.split, 0);
  ASSERT_LE(c.split, c.tokens);
  if (!c.allowNaN) {
    for (float x : c.logits) ASSERT_FALSE(std::isnan(x));
  }
}

bool sameBits(const Case& a, const Case& b) {
  if (a.tokens != b.tokens || a.experts != b.experts || a.k != b.k || a.threads != b.threads ||
      a.split != b.split || a.variant != b.variant || a.allowNaN != b.allowNaN) {
    return false;
  }
  for (size_t i = 0; i < a.logits.size(); ++i) {
    if (bitsOf(a.logits[i]) != bitsOf(b.logits[i])) return false;
  }
  return true;
}

// Throughput (docs/fuzz.md): most cases are small batches, but every T in [1, 64] stays
// reachable from bytes and every T round-trips through encodeCase.
TEST(CaseDecode, BatchSizesAreMostlySmallButAllReachable) {
  for (int32_t t = 1; t <= kMaxTokens; ++t) {
    Case c;
    c.tokens = t;
    c.experts = 2;
    c.k = 1;
    c.split = t / 2;
    c.logits.assign(2 * static_cast<size_t>(t), 1.5f);
    Case back = decodeCase(encodeCase(c));
    ASSERT_EQ(back.tokens, t);
    ASSERT_TRUE(sameBits(c, back)) << "T = " << t;
  }
  // The shape header alone (E = 2, k, t8, then the large-batch byte) over every t8 and the
  // byte after it: T > 8 for exactly the t8 values of one case in 16.
  int large = 0, total = 0;
  std::vector<bool> seen(kMaxTokens + 1, false);
  for (int t8 = 0; t8 < 256; ++t8) {
    for (int next = 0; next < 256; ++next) {
      const uint8_t bytes[] = {1, 1, static_cast<uint8_t>(t8), static_cast<uint8_t>(next)};
      Case c = decodeCase(std::span<const uint8_t>(bytes, sizeof bytes));
      expectValid(c);
      seen[c.tokens] = true;
      large += c.tokens > 8;
      ++total;
    }
  }
  for (int32_t t = 1; t <= kMaxTokens; ++t) EXPECT_TRUE(seen[t]) << "T = " << t;
  EXPECT_GT(large, total / 20);
  EXPECT_LT(large, total / 12);
}

TEST(CaseDecode, SeededStreamsGiveValidCasesThatRoundTrip) {
  SeededSource src(20261129);
  std::printf("seed 20261129\n");
  int sawLargeE = 0, sawKAboveE = 0, sawNaN = 0, sawTie = 0;
  for (int n = 0; n < 2000; ++n) {
    Case c = decodeCase(src);
    expectValid(c);
    sawLargeE += c.experts > 64;
    sawKAboveE += c.k > c.experts;
    for (float x : c.logits) sawNaN += std::isnan(x);
    for (int32_t e = 1; e < c.experts; ++e) sawTie += c.logits[e] == c.logits[0];
    Case back = decodeCase(encodeCase(c));
    ASSERT_TRUE(sameBits(c, back)) << "case " << n << " does not round-trip through bytes";
    Case viaJSON = caseFromJSON(caseToJSON(c));
    ASSERT_TRUE(sameBits(c, viaJSON)) << "case " << n << " does not round-trip through JSON";
  }
  EXPECT_GT(sawLargeE, 100);
  EXPECT_GT(sawKAboveE, 10);
  EXPECT_GT(sawNaN, 0);
  EXPECT_GT(sawTie, 100);
}

TEST(CaseDecode, EmptyAndShortInputsStillDecode) {
  expectValid(decodeCase(std::span<const uint8_t>()));
  const uint8_t one[] = {0xff};
  expectValid(decodeCase(one));
}

TEST(CaseDecode, SpecialPoolHasTheIssuesValues) {
  auto pool = specialPool();
  auto has = [&](uint32_t bits) {
    for (float x : pool) {
      if (bitsOf(x) == bits) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(0x00000000u));                            // +0
  EXPECT_TRUE(has(0x80000000u));                            // -0
  EXPECT_TRUE(has(0x7f800000u));                            // +inf
  EXPECT_TRUE(has(0xff800000u));                            // -inf
  EXPECT_TRUE(has(0x7f7fffffu));                            // FLT_MAX
  EXPECT_TRUE(has(0x00000001u));                            // smallest subnormal
  EXPECT_TRUE(has(0x30800000u));                            // 2^-30
  EXPECT_TRUE(std::isinf(std::exp(floatOf(0x42b17218u))));  // 88.72284 overflows expf
}

TEST(CaseMutate, MutationsKeepCasesValid) {
  SeededSource src(7);
  Case c = decodeCase(src);
  for (int n = 0; n < 3000; ++n) {
    mutateCase(c, src);
    expectValid(c);
  }
}

// Under MOE_FUZZ_MAX_EXPERTS=64 the target decodes E modulo 64: the custom mutator must
// write cases inside that limit, or its bytes decode to another case in the target.
TEST(CaseMutate, MutationsRespectTheExpertLimitAndRoundTrip) {
  SeededSource src(11);
  Case c = decodeCase(src, 64);
  int sawEdge = 0;
  for (int n = 0; n < 3000; ++n) {
    mutateCase(c, src, 64);
    expectValid(c);
    ASSERT_LE(c.experts, 64) << "mutation " << n;
    sawEdge += c.experts == 64;
    Case back = decodeCase(encodeCase(c), 64);
    ASSERT_TRUE(sameBits(c, back)) << "mutation " << n << " does not round-trip at E <= 64";
  }
  EXPECT_GT(sawEdge, 0);
}

TEST(CaseJSON, RejectsMalformedCases) {
  nlohmann::json j = {{"tokens", 1}, {"experts", 2}, {"k", 1}, {"logits", {"0x00000000"}}};
  EXPECT_THROW(caseFromJSON(j), std::invalid_argument);  // too few logits
  j["logits"] = {"0x00000000", "zz"};
  EXPECT_THROW(caseFromJSON(j), std::invalid_argument);  // not hex
  j["logits"] = {"0x00000000", "0x3f800000"};
  j["experts"] = 0;
  EXPECT_THROW(caseFromJSON(j), std::invalid_argument);
  j.erase("experts");
  EXPECT_THROW(caseFromJSON(j), std::invalid_argument);
}

TEST(FloatBits, HexAndUlp) {
  EXPECT_EQ(hex32(1.0f), "0x3f800000");
  EXPECT_EQ(bitsOf(parseHex32("0x80000000")), 0x80000000u);
  EXPECT_THROW(parseHex32("0x3f80000"), std::invalid_argument);
  EXPECT_EQ(ulp32(1.0), 0x1p-23);
  EXPECT_EQ(ulp32(0.75), 0x1p-24);
  EXPECT_EQ(ulp32(0x1p-140), 0x1p-149);
  EXPECT_EQ(nextUp(1.0f), floatOf(0x3f800001u));
}

// nextUp64 / nextDown64 are std::nextafter toward ±inf, bit for bit: at the edges (zeros,
// subnormals, the largest finite, infinities, NaN) and at random bit patterns.
TEST(FloatBits, NextUpDown64AreNextafter) {
  std::vector<double> xs = {
      0.0,         -0.0,     0x1p-1074, -0x1p-1074, 0x1p-1022, -0x1p-1022, DBL_MAX,
      -DBL_MAX,    HUGE_VAL, -HUGE_VAL, 1.0,        -1.0,      0x1p-1073,  0x0.fffffffffffffp-1022,
      std::nan("")};
  std::mt19937_64 rng(test::testSeed());
  for (int i = 0; i < 200000; ++i) xs.push_back(std::bit_cast<double>(rng()));
  for (double x : xs) {
    EXPECT_EQ(bitsOf64(nextUp64(x)), bitsOf64(std::nextafter(x, HUGE_VAL))) << hex64(x);
    EXPECT_EQ(bitsOf64(nextDown64(x)), bitsOf64(std::nextafter(x, -HUGE_VAL))) << hex64(x);
  }
}

}  // namespace
}  // namespace moe::fuzz

namespace moe::fuzz {
namespace {

TEST(ShapeSets, ParseValuesAndRangesAndRejectTheRest) {
  const IntSet s = IntSet::parse("8, 1-4,16-32,3", "--experts", 0, 4096);
  EXPECT_EQ(s.text(), "1-4,8,16-32");
  EXPECT_TRUE(s.contains(3));
  EXPECT_FALSE(s.contains(5));
  EXPECT_EQ(s.clamp(2, 20).text(), "2-4,8,16-20");
  for (const char* bad : {"", "abc", "8-", "-1", "9-3", "5000", "1,,2"}) {
    EXPECT_THROW(IntSet::parse(bad, "--experts", 0, 4096), std::invalid_argument) << bad;
  }
}

// Every drawn case lies inside the space asked for, and the space's edges come up.
TEST(ShapeDraw, CasesStayInsideTheSpaceAndReachItsEdges) {
  ShapeSpace space;
  space.experts = IntSet::parse("7-9,256", "e", 0, 4096);
  space.k = IntSet::parse("1,8", "k", 0, 4098);
  space.tokens = IntSet::parse("1-5000", "t", 0, 65536);
  space.tokensGiven = true;
  SeededSource src(2026);
  bool sawLargeBatch = false, saw256 = false, sawOne = false;
  for (int i = 0; i < 400; ++i) {
    const Case c = drawCase(src, space);
    ASSERT_TRUE(space.experts.contains(c.experts)) << c.experts;
    ASSERT_TRUE(space.k.contains(c.k)) << c.k;
    ASSERT_TRUE(space.tokens.contains(c.tokens)) << c.tokens;
    ASSERT_EQ(c.logits.size(), static_cast<size_t>(c.tokens) * c.experts);
    ASSERT_LE(c.split, c.tokens);
    sawLargeBatch |= c.tokens >= 4096;
    saw256 |= c.experts == 256;
    sawOne |= c.tokens == 1;
  }
  EXPECT_TRUE(sawLargeBatch);
  EXPECT_TRUE(saw256);
  EXPECT_TRUE(sawOne);
}

// The default space: T up to 65,536 and E up to 4,096 are drawn, never past 2^24 logits,
// while most cases stay small.
TEST(ShapeDraw, TheDefaultSpaceReachesLargeBatchesAndStaysMostlySmall) {
  ShapeSpace space;
  SeededSource src(7);
  int small = 0, large = 0, wide = 0;
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    const Case c = drawCase(src, space);
    ASSERT_LE(static_cast<int64_t>(c.tokens) * c.experts, kDrawMaxLogits);
    ASSERT_LE(c.k, c.experts + 2);
    small += c.tokens <= 64 ? 1 : 0;
    large += c.tokens >= 4096 ? 1 : 0;
    wide += c.experts > 1024 ? 1 : 0;
  }
  EXPECT_GT(small, n * 6 / 10);
  EXPECT_GT(large, n / 100);
  EXPECT_GT(wide, n / 100);
}

}  // namespace
}  // namespace moe::fuzz
