// The exp each router uses, against the correctly rounded exp, over every argument a
// router passes it: x - max lies in [-inf, 0], and below -103.98 the result rounds to 0.
// The maximum error found must not exceed the contract's exp_max_ulp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "moe/routers.hpp"
#include "route_helpers.hpp"

namespace moe::test {
namespace {

using ExpFn = std::function<void(const float*, float*, size_t)>;

// Error in ulp of the binary32 result y against exp(x), computed in double (glibc's exp
// is within 1 ulp of double, 2^-29 of a binary32 ulp: far below what is measured).
double ulpError(float x, float y) {
  const double exact = std::exp(double(x));
  return std::fabs(double(y) - exact) / ulp32(exact);
}

struct Sweep {
  double maxUlp = 0;
  float worstX = 0;
};

// Every `stride`-th float from `lo` up to `hi` (both <= 0), walked by bit pattern, in
// chunks so that an exhaustive sweep needs little memory.
Sweep sweep(const ExpFn& exp, float lo, float hi, uint32_t stride) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<float> xs, ys(kChunk);
  xs.reserve(kChunk);
  Sweep s;
  auto flush = [&] {
    exp(xs.data(), ys.data(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      const double e = ulpError(xs[i], ys[i]);
      if (e > s.maxUlp) {
        s.maxUlp = e;
        s.worstX = xs[i];
      }
    }
    xs.clear();
  };
  const uint64_t from = std::bit_cast<uint32_t>(lo), to = std::bit_cast<uint32_t>(hi);
  for (uint64_t b = from; b >= to; b -= stride) {  // negative floats: bits fall toward -0
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    if (xs.size() == kChunk) flush();
    if (b < to + stride) break;
  }
  flush();
  return s;
}

double claimedExpUlp(const char* router) {
  return nlohmann::json::parse(findRouter(router)->contract_json)["exp_max_ulp"].get<double>();
}

// MOE_EXP_SWEEP_STRIDE=1 checks every float in [-104, 0] (about a minute per exp; the
// contract's figures come from that run).
uint32_t sweepStride() {
  const char* env = std::getenv("MOE_EXP_SWEEP_STRIDE");
  const long stride = env != nullptr ? std::strtol(env, nullptr, 10) : 61;
  return stride >= 1 ? static_cast<uint32_t>(stride) : 61u;
}

// Sweeps `exp` once and holds each router that applies it to its claimed bound.
void checkExp(std::initializer_list<const char*> routers, const ExpFn& exp) {
  // Whole range, sampled by bit pattern (stride 61: ~18 million points, all exponents and
  // well-mixed mantissas), plus every float in the gradual-underflow band [-104, -87].
  const Sweep wide = sweep(exp, -104.0f, -0.0f, sweepStride());
  const Sweep tail = sweep(exp, -104.0f, -87.0f, 1);
  const Sweep worst = wide.maxUlp > tail.maxUlp ? wide : tail;
  for (const char* router : routers) {
    std::printf("%s: exp max error %.4f ulp at x = %a\n", router, worst.maxUlp, worst.worstX);
    EXPECT_LE(worst.maxUlp, claimedExpUlp(router)) << router << " at x = " << worst.worstX;
  }
  // Special arguments: exp(-0) = 1, exp(-inf) = 0.
  const float specials[] = {-0.0f, -INFINITY};
  float out[2];
  exp(specials, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(ExpUlp, HostExpfOfTheScalarRouters) {
  checkExp({"scalar-probs"}, [](const float* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
  });
}

TEST(ExpUlp, HighwayExpAvx2) {
  if (!detail::cpuHasAvx2()) GTEST_SKIP() << "this CPU lacks AVX2";
  checkExp({"avx2-probs"}, detail::avx2Exp);
}

TEST(ExpUlp, HighwayExpAvx512) {
  if (!detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  checkExp({"avx512-probs"}, detail::avx512Exp);
}

// The AVX-512 kernels' own exp, which those routers (and auto where it dispatches to
// AVX-512) also apply.
TEST(ExpUlp, FastExpAvx512) {
  if (!detail::cpuHasAvx512()) GTEST_SKIP() << "this CPU lacks AVX-512";
  if (std::string(detail::autoTargetName()).starts_with("AVX3")) {
    checkExp({"avx512-probs", "avx512-logits", "auto-probs"}, detail::avx512FastExp);
  } else {
    checkExp({"avx512-probs", "avx512-logits"}, detail::avx512FastExp);
  }
}

TEST(ExpUlp, HighwayExpDispatched) {
  std::printf("auto dispatches to %s\n", detail::autoTargetName());
  checkExp({"auto-probs"}, detail::autoExp);
}

}  // namespace
}  // namespace moe::test
