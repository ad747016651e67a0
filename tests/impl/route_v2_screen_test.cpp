// The AVX-512 moe_route_v2 screens sigmoid rows with an estimate of its sigmoid
// (impl/src/sigmoid_estimate-inl.h) and computes the exact sigmoid only for the experts
// that can still be kept. Its claim: the estimate is within kSigmoidEstimateError of the
// kernel's sigmoid for every float, and the screened rows equal the rows computed with
// every score exact, bit for bit, whatever the row (near-ties, saturated sigmoids, groups
// too close to call, large biases, infinities, NaN). Seeds: MOE_TEST_SEED when set.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "moe/routers.hpp"
#include "moe/test/seed.hpp"

namespace moe::test {
namespace {

// MOE_EXP_SWEEP_STRIDE=1 checks every float (about 15 s; the bound's figure comes from
// that run: 4.36e-5 at x = 0x1.df6f68p+1 on Zen 4).
uint32_t sweepStride() {
  const char* env = std::getenv("MOE_EXP_SWEEP_STRIDE");
  const long stride = env != nullptr ? std::strtol(env, nullptr, 10) : 61;
  return stride >= 1 ? static_cast<uint32_t>(stride) : 61u;
}

TEST(SigmoidEstimate, WithinItsBoundOfTheKernelsSigmoidForEveryFloat) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  const uint32_t stride = sweepStride();
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<float> x, exact(kChunk), estimate(kChunk);
  x.reserve(kChunk);
  double worst = 0;
  float worstX = 0;
  auto flush = [&] {
    moe::detail::avx512FamilySigmoid(x.data(), exact.data(), x.size());
    moe::detail::avx512SigmoidEstimate(x.data(), estimate.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      // A NaN estimate sends the row to the exact path; a finite one must be close.
      if (std::isnan(estimate[i])) continue;
      ASSERT_FALSE(std::isnan(exact[i])) << "finite estimate of a NaN sigmoid at " << x[i];
      const double d = std::fabs(double(exact[i]) - double(estimate[i]));
      if (d > worst) {
        worst = d;
        worstX = x[i];
      }
    }
    x.clear();
  };
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += stride) {
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    if (x.size() == kChunk) flush();
  }
  // Where the sigmoid saturates or the exp under- and overflows, every float.
  for (float lo : {-120.0f, 10.0f}) {
    for (float v = lo; v < lo + 110.0f; v = std::nextafter(v, 1000.0f)) {
      x.push_back(v);
      if (x.size() == kChunk) flush();
    }
  }
  flush();
  std::printf("sigmoid estimate: max error %.4g at x = %a (bound %.4g)\n", worst, worstX,
              double(moe::detail::kSigmoidEstimateError));
  EXPECT_LE(worst, double(moe::detail::kSigmoidEstimateError)) << "at x = " << worstX;
  // NaN must not pass as a number.
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity()};
  float out[2];
  moe::detail::avx512SigmoidEstimate(specials, out, 2);
  EXPECT_TRUE(std::isnan(out[0]));
}

struct Shape {
  int32_t experts, k, groups, topkGroups;
  bool top2Sum;
};

// Sigmoid routing of shape `s` with `bias` (empty: none), scaled by 2.5.
moe::detail::FamilyParams sigmoidParams(const Shape& s, const std::vector<float>& bias,
                                        bool renormalize) {
  moe::detail::FamilyParams p;
  p.experts = s.experts;
  p.k = s.k;
  p.sigmoid = true;
  p.bias = bias.empty() ? nullptr : bias.data();
  p.groups = s.groups;
  p.topkGroups = s.topkGroups;
  p.top2Sum = s.groups > 1 && s.top2Sum;
  p.renormalize = renormalize;
  p.scale = 2.5f;
  return p;
}

// A bias of `experts` entries, each drawn uniformly from [-scale, scale].
std::vector<float> uniformBias(std::mt19937& rng, int32_t experts, float scale) {
  std::uniform_real_distribution<float> draw(-scale, scale);
  std::vector<float> bias(static_cast<size_t>(experts));
  for (auto& v : bias) v = draw(rng);
  return bias;
}

// Rows that make the screen work: spread or clustered logits, exact and near ties, values
// where the sigmoid is 1 in binary32, or subnormal or 0 (logits below -87), a few
// infinities and NaNs.
std::vector<float> hardRows(std::mt19937& rng, int32_t tokens, int32_t experts) {
  std::vector<float> x(size_t(tokens) * experts);
  std::uniform_int_distribution<int> kind(0, 8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, experts - 1);
  for (int32_t t = 0; t < tokens; ++t) {
    float* row = x.data() + size_t(t) * experts;
    const int how = kind(rng);
    const float spread = how == 0 ? 0.001f : how == 1 ? 20.0f : 2.0f;
    for (int32_t e = 0; e < experts; ++e) row[e] = spread * normal(rng);
    if (how == 2) {  // ties: a handful of values repeated
      for (int32_t e = 0; e < experts; ++e) row[e] = float(int(row[e] * 2)) / 2;
    }
    if (how == 3) {  // saturated: many sigmoids exactly 1
      for (int32_t e = 0; e < experts; e += 3) row[e] = 17.0f + std::fabs(row[e]);
    }
    if (how == 4) {  // near-ties a few ulp apart around the top
      const float top = 1.5f;
      for (int32_t e = 0; e < experts; e += 2) {
        row[e] = std::nextafter(top, top + float(e % 7) - 3.0f);
      }
    }
    if (how == 5) row[pick(rng)] = std::numeric_limits<float>::infinity();
    if (how == 6) row[pick(rng)] = -std::numeric_limits<float>::infinity();
    if (how == 7 && t % 5 == 0) row[pick(rng)] = std::numeric_limits<float>::quiet_NaN();
    if (how == 8) {  // far below 0: sigmoids subnormal, or 0 below about -104
      for (int32_t e = 0; e < experts; ++e) row[e] = -95.0f + 5.0f * row[e];
    }
  }
  return x;
}

// Routed rows against the exact rows', bit for bit; on failure the first slot that
// differs.
testing::AssertionResult SameRows(int32_t k, const std::vector<int32_t>& ids,
                                  const std::vector<float>& gates, const std::vector<int32_t>& want,
                                  const std::vector<float>& wantGates) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != want[i] ||
        std::bit_cast<uint32_t>(gates[i]) != std::bit_cast<uint32_t>(wantGates[i])) {
      return testing::AssertionFailure()
             << "token " << i / size_t(k) << " slot " << i % size_t(k) << ": id " << ids[i]
             << " gate " << gates[i] << ", the exact rows' id " << want[i] << " gate "
             << wantGates[i];
    }
  }
  return testing::AssertionSuccess();
}

// The screened rows (and the token-parallel kernel) against the exact rows, bit for bit.
testing::AssertionResult ScreenedEqualsExact(const moe::detail::FamilyParams& p,
                                             const std::vector<float>& x, int32_t tokens) {
  std::vector<int32_t> ids(size_t(tokens) * p.k, -7), want(ids.size(), -9);
  std::vector<float> gates(ids.size(), -7), wantGates(ids.size(), -9);
  moe::detail::avx512FamilyRows(p, x.data(), tokens, ids.data(), gates.data());
  moe::detail::avx512FamilyRowsUnscreened(p, x.data(), tokens, want.data(), wantGates.data());
  return SameRows(p.k, ids, gates, want, wantGates);
}

TEST(ScreenedRows, EqualTheExactRowsBitForBit) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const Shape shapes[] = {
      {256, 8, 8, 4, true},  {256, 8, 8, 4, false}, {256, 8, 1, 1, false}, {384, 8, 1, 1, false},
      {128, 1, 1, 1, false}, {32, 4, 1, 1, false},  {32, 8, 2, 1, true},   {64, 6, 4, 2, true},
      {64, 3, 4, 1, false},  {512, 8, 16, 4, true}, {1024, 8, 8, 2, true}, {256, 2, 16, 16, true},
      {128, 8, 8, 1, true},  {48, 5, 3, 2, true},   {96, 8, 2, 2, false},  {256, 12, 8, 4, true},
      {256, 1, 8, 4, true},  {64, 1, 4, 1, false},  {32, 1, 1, 1, false},  {1024, 1, 8, 2, true},
  };
  const float biasScales[] = {0.0f, 0.1f, 3.0f, 1e4f};
  const int32_t tokens = 257;
  for (const Shape& s : shapes) {
    for (const float biasScale : biasScales) {
      for (const bool renormalize : {true, false}) {
        std::vector<float> bias;
        if (biasScale > 0) {
          bias = uniformBias(rng, s.experts, biasScale);
          // Two experts with equal biases and an exact tie of keys possible.
          bias[1] = bias[0];
        }
        const moe::detail::FamilyParams p = sigmoidParams(s, bias, renormalize);
        ASSERT_TRUE(ScreenedEqualsExact(p, hardRows(rng, tokens, s.experts), tokens))
            << "E=" << s.experts << " k=" << s.k << " G=" << s.groups << " bias " << biasScale;
      }
    }
  }
}

// Batches of at least 1,024 rows of E >= 256 are taken in strided runs, lane t of a group on
// row t * 64 of its run (ForEachLaneGroup in impl/src/lane_network-inl.h): two runs and a
// tail, with the hard rows' hand-backs (ties, NaN, infinities) landing in strided groups,
// must still equal the exact rows token by token.
TEST(ScreenedRows, StridedRunsEqualTheExactRowsBitForBit) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const Shape shapes[] = {
      {256, 8, 8, 4, true}, {384, 8, 1, 1, false}, {512, 8, 16, 4, true}, {256, 1, 1, 1, false}};
  const int32_t tokens = 2 * 1024 + 37;
  for (const Shape& s : shapes) {
    const std::vector<float> bias = uniformBias(rng, s.experts, 0.1f);  // p points into it
    const moe::detail::FamilyParams p = sigmoidParams(s, bias, true);
    ASSERT_TRUE(ScreenedEqualsExact(p, hardRows(rng, tokens, s.experts), tokens))
        << "E=" << s.experts << " k=" << s.k << " G=" << s.groups;
  }
}

// Kept experts whose keys tie exactly (equal logits, equal biases) go lower index first.
// The token-parallel kernel takes the estimates' order unless some lane is out of the exact
// order, and with negative keys (a bias of -2) the estimates' codes put the higher index
// first: a check that missed ties would leave those pairs reversed.
TEST(ScreenedRows, TiedKeptKeysGoToTheLowerIndexWhateverTheirSign) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const int32_t experts = 256;
  const int32_t k = 8;
  const int32_t tokens = 64;
  for (const float biasValue : {-2.0f, 0.0f, 0.5f}) {
    const std::vector<float> bias(size_t(experts), biasValue);
    const moe::detail::FamilyParams p = sigmoidParams({experts, k, 8, 4, true}, bias, true);
    std::uniform_real_distribution<float> low(-6.0f, -4.0f);
    std::uniform_int_distribution<int32_t> inGroup(0, 31);
    std::vector<float> x(size_t(tokens) * experts);
    for (int32_t t = 0; t < tokens; ++t) {
      float* row = x.data() + size_t(t) * experts;
      for (int32_t e = 0; e < experts; ++e) row[e] = low(rng);
      // Four groups each hold a pair of equal logits, well apart from the other pairs.
      for (int32_t pair = 0; pair < 4; ++pair) {
        const int32_t group = (t + 2 * pair) % 8;
        const int32_t a = 32 * group + inGroup(rng);
        int32_t b = 32 * group + inGroup(rng);
        if (b == a) b = 32 * group + (a % 32 + 7) % 32;
        row[a] = row[b] = 3.0f - 0.5f * static_cast<float>(pair);
      }
    }
    ASSERT_TRUE(ScreenedEqualsExact(p, x, tokens)) << "bias " << biasValue;
  }
}

// Groups whose scores tie within the estimates' error (DeepSeek-V3's shape): three groups
// clearly ahead, and for the fourth place a group A of two experts against a group B of
// three whose second and third keys nearly tie, so that B's exact top two may not be its
// estimated top two. The keys are placed in the key space (x = logit(c - b)) and jittered
// at scales around the estimates' error. The kernel decides such rows on exact bounds
// (the kept groups' best two exact keys, the best group left out's from above) and must
// agree with the exact rows; a bound that forgot the unlisted experts' error, or one that
// ignored them, keeps the wrong group.
TEST(ScreenedRows, CloseGroupsDecidedOnExactBoundsEqualTheExactRows) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const int32_t experts = 256;
  const int32_t groupSize = 32;
  const int32_t tokens = 4096;
  const std::vector<float> bias = uniformBias(rng, experts, 0.1f);
  std::uniform_real_distribution<float> low(-6.0f, -4.0f);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int32_t> inGroup(0, groupSize - 1);
  const double scales[] = {1e-6, 1e-5, 4e-5, 1e-4};
  for (const bool top2 : {true, false}) {
    const moe::detail::FamilyParams p = sigmoidParams({experts, 8, 8, 4, top2}, bias, true);
    std::vector<float> x(size_t(tokens) * experts);
    for (int32_t t = 0; t < tokens; ++t) {
      float* row = x.data() + size_t(t) * experts;
      for (int32_t e = 0; e < experts; ++e) row[e] = low(rng);
      std::vector<int32_t> order{0, 1, 2, 3, 4, 5, 6, 7};
      std::shuffle(order.begin(), order.end(), rng);
      const double jitter = scales[t % 4];
      std::vector<int32_t> used;
      // Expert `e` of group `g` (distinct within the row) at key c, jittered.
      const auto place = [&](int32_t g, double c) {
        int32_t e = 0;
        do {
          e = g * groupSize + inGroup(rng);
        } while (std::find(used.begin(), used.end(), e) != used.end());
        used.push_back(e);
        const double s = c + jitter * unit(rng) - double(bias[size_t(e)]);
        row[e] = static_cast<float>(std::log(s / (1.0 - s)));
      };
      // Keys below 0.9 and biases within 0.1 keep every s = c - b inside (0, 1).
      for (int32_t r = 0; r < 3; ++r) {
        place(order[r], 0.88 - 0.01 * r);
        place(order[r], 0.85 - 0.01 * r);
      }
      // A: 0.80 + 0.70; B: 0.78 + (0.72 twice). With the max, A's 0.80 against B's 0.80.
      place(order[3], 0.80);
      place(order[3], 0.70);
      place(order[4], top2 ? 0.78 : 0.80);
      place(order[4], 0.72);
      place(order[4], 0.72);
    }
    ASSERT_TRUE(ScreenedEqualsExact(p, x, tokens)) << (top2 ? "top-2 sum" : "max");
  }
}

// DeepSeek-V3's groups keep lists of their best 4 estimated keys (LaneFamily::shortLists
// in impl/src/lane_family-inl.h): a row that keeps 5 or more experts of one group must be
// found by that group's 5th key, the best it drops, and go to the exact steps. Rows with m
// (4..8) high logits in one group, at random places in the group, in one of its blocks or
// in half a block, so that the 5th lands in any quarter of either block, and in strided
// runs as well as single groups; the exact rows must indeed keep 5 or more of one group in
// many of them.
TEST(ScreenedRows, RowsKeepingFiveOfOneGroupEqualTheExactRows) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const int32_t experts = 256;
  const int32_t groupSize = 32;
  const int32_t k = 8;
  const int32_t tokens = 2 * 1024 + 16;
  const std::vector<float> bias = uniformBias(rng, experts, 0.1f);
  std::normal_distribution<float> logit(0.0f, 1.5f);
  std::uniform_real_distribution<float> high(6.0f, 9.0f);
  std::uniform_int_distribution<int32_t> groupOf(0, 7);
  std::uniform_int_distribution<int32_t> many(4, 8);
  for (const bool top2 : {true, false}) {
    const moe::detail::FamilyParams p = sigmoidParams({experts, k, 8, 4, top2}, bias, true);
    std::vector<float> x(size_t(tokens) * experts);
    for (int32_t t = 0; t < tokens; ++t) {
      float* row = x.data() + size_t(t) * experts;
      for (int32_t e = 0; e < experts; ++e) row[e] = logit(rng);
      // Anywhere in the group, in one of its blocks, or in one half of a block (whose
      // quarters the network merges first).
      const int32_t span = t % 3 == 0 ? groupSize : t % 3 == 1 ? 16 : 8;
      std::vector<int32_t> places(static_cast<size_t>(span));
      std::iota(places.begin(), places.end(),
                groupOf(rng) * groupSize +
                    span * std::uniform_int_distribution<int32_t>(0, groupSize / span - 1)(rng));
      std::shuffle(places.begin(), places.end(), rng);
      const int32_t m = many(rng);
      for (int32_t i = 0; i < m; ++i) row[places[size_t(i)]] = high(rng);
    }
    std::vector<int32_t> ids(size_t(tokens) * k), want(ids.size());
    std::vector<float> gates(ids.size()), wantGates(ids.size());
    moe::detail::avx512FamilyRows(p, x.data(), tokens, ids.data(), gates.data());
    moe::detail::avx512FamilyRowsUnscreened(p, x.data(), tokens, want.data(), wantGates.data());
    int32_t rowsKeepingFive = 0;
    for (int32_t t = 0; t < tokens; ++t) {
      int32_t fromGroup[8] = {};
      for (int32_t s = 0; s < k; ++s) ++fromGroup[want[size_t(t) * k + s] / groupSize];
      if (*std::max_element(fromGroup, fromGroup + 8) >= 5) ++rowsKeepingFive;
    }
    EXPECT_GE(rowsKeepingFive, tokens / 4) << "too few rows keep five of one group to test";
    ASSERT_TRUE(SameRows(k, ids, gates, want, wantGates)) << (top2 ? "top-2 sum" : "max");
  }
}

// The token-parallel kernel finds NaN keys by the invalid flag of MXCSR, which its
// comparisons raise (lane_family-inl.h, InvalidFlagScope). A caller's floating-point state
// must come back as it was, with the flags raised meanwhile: a caller who unmasked the
// invalid exception gets no trap from a NaN logit, and a flag the caller had set before
// the call is still set after it (the kernel clears the flag for its own reads).
TEST(ScreenedRows, NaNRowsLeaveTheCallersFloatingPointStateAsItWas) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const Shape deepSeek{256, 8, 8, 4, true};
  const std::vector<float> bias = uniformBias(rng, deepSeek.experts, 0.1f);
  const moe::detail::FamilyParams p = sigmoidParams(deepSeek, bias, true);
  const int32_t tokens = 64;
  std::vector<float> x = hardRows(rng, tokens, deepSeek.experts);
  x[size_t(37) * 256 + 5] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int32_t> want(size_t(tokens) * p.k), ids(want.size());
  std::vector<float> wantGates(want.size()), gates(want.size());
  moe::detail::avx512FamilyRowsUnscreened(p, x.data(), tokens, want.data(), wantGates.data());

  constexpr uint32_t kInvalidFlag = 1u << 0, kInvalidMask = 1u << 7, kFlags = 0x3Fu;
  const uint32_t saved = _mm_getcsr();
  // Invalid unmasked, flags clear: a NaN that reached a comparison unmasked would trap.
  const uint32_t unmasked = (saved & ~kFlags) & ~kInvalidMask;
  _mm_setcsr(unmasked);
  moe::detail::avx512FamilyRows(p, x.data(), tokens, ids.data(), gates.data());
  const uint32_t afterNaN = _mm_getcsr();
  // A flag set before the call, on rows with no NaN.
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> clean(size_t(16) * 256);
  for (auto& v : clean) v = normal(rng);
  std::vector<int32_t> cleanIds(size_t(16) * p.k);
  std::vector<float> cleanGates(cleanIds.size());
  _mm_setcsr(saved | kInvalidFlag);
  moe::detail::avx512FamilyRows(p, clean.data(), 16, cleanIds.data(), cleanGates.data());
  const uint32_t afterClean = _mm_getcsr();
  _mm_setcsr(saved);

  EXPECT_EQ(afterNaN & ~kFlags, unmasked) << "control bits changed";
  EXPECT_NE(afterNaN & kInvalidFlag, 0u) << "the NaN's invalid flag was not given back";
  EXPECT_NE(afterClean & kInvalidFlag, 0u) << "the caller's invalid flag was cleared";
  EXPECT_EQ(afterClean & ~kFlags, saved & ~kFlags);
  EXPECT_TRUE(SameRows(p.k, ids, gates, want, wantGates));
}

// Rows with a NaN logit leave the token-parallel kernel's comparisons with anything in
// their lanes; the ids it then gathers by must still be experts of the row. Logits and
// biases end where an inaccessible page begins, so that a gather past a row's end or the
// bias's faults, with E = 32 (ids of the padding reach 255) and groups.
TEST(ScreenedRows, NaNRowsReadNothingPastTheirRows) {
  if (!moe::detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  std::mt19937 rng = testRng();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const Shape& s : {Shape{32, 4, 1, 1, false}, Shape{64, 6, 4, 2, true}}) {
    const int32_t tokens = 16;
    const size_t logitBytes = size_t(tokens) * size_t(s.experts) * sizeof(float);
    const size_t biasBytes = size_t(s.experts) * sizeof(float);
    const size_t span = 4 * page;  // logits' page, bias's page, a guard after each
    void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(base, MAP_FAILED);
    auto* bytes = static_cast<char*>(base);
    ASSERT_EQ(mprotect(bytes + page, page, PROT_NONE), 0);
    ASSERT_EQ(mprotect(bytes + 3 * page, page, PROT_NONE), 0);
    auto* x = reinterpret_cast<float*>(bytes + page - logitBytes);
    auto* bias = reinterpret_cast<float*>(bytes + 3 * page - biasBytes);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::uniform_int_distribution<int32_t> pick(0, s.experts - 1);
    for (int32_t e = 0; e < s.experts; ++e) bias[e] = 0.05f * normal(rng);
    for (size_t i = 0; i < size_t(tokens) * size_t(s.experts); ++i) x[i] = normal(rng);
    // Odd rows with NaNs in about a quarter of their places; every place of the last
    // row and of every fourth (no group kept on NaN comparisons: padding ids).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int32_t t = 1; t < tokens; t += 2) {
      float* row = x + size_t(t) * size_t(s.experts);
      if (t % 4 == 1 || t == tokens - 1) {
        std::fill(row, row + s.experts, nan);
        continue;
      }
      for (int32_t i = 0; i < s.experts / 4; ++i) row[pick(rng)] = nan;
    }
    const std::vector<float> biasCopy(bias, bias + s.experts);
    const std::vector<float> rows(x, x + size_t(tokens) * size_t(s.experts));
    moe::detail::FamilyParams p = sigmoidParams(s, biasCopy, true);
    p.bias = bias;
    std::vector<int32_t> ids(size_t(tokens) * size_t(s.k));
    std::vector<float> gates(ids.size());
    moe::detail::avx512FamilyRows(p, x, tokens, ids.data(), gates.data());
    munmap(base, span);
    p.bias = biasCopy.data();
    EXPECT_TRUE(ScreenedEqualsExact(p, rows, tokens)) << "E=" << s.experts;
  }
}

}  // namespace
}  // namespace moe::test
