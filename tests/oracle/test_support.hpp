#pragma once
// Random and adversarial score vectors for the property tests, and the test seed: the one
// seed of every suite (tests/support, moe/test/seed.hpp: MOE_TEST_SEED in decimal, printed
// when a test fails).
#include <gmpxx.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "moe/test/seed.hpp"

namespace moe::oracle::testing {

inline std::uint64_t testSeed() {
  return moe::test::testSeed();
}

// One generator per test, seeded from the test seed and the test's own salt.
inline std::mt19937_64 makeRng(std::uint64_t salt) {
  return std::mt19937_64(testSeed() ^ (salt * 0x9E3779B97F4A7C15ull));
}

// Expert counts swept: empty, tiny, not powers of two, a SIMD-ish boundary, and random.
inline std::size_t pickE(std::mt19937_64& rng) {
  static const std::size_t fixed[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65};
  if (rng() % 3 != 0) return fixed[rng() % std::size(fixed)];
  return 1 + rng() % 100;
}

// k swept across 0, 1, E - 1, E, E + 1 and random values (k > E included).
inline std::size_t pickK(std::mt19937_64& rng, std::size_t E) {
  switch (rng() % 6) {
    case 0:
      return 0;
    case 1:
      return E;
    case 2:
      return E + 1 + rng() % 3;
    case 3:
      return E > 0 ? E - 1 : 0;
    default:
      return rng() % (E + 2);
  }
}

// Scenario of a score vector: each stresses a different corner of IEEE comparisons.
enum class Scenario {
  kNormal,
  kTies,
  kSignedZeros,
  kInfinities,
  kSubnormals,
  kUlpApart,
  kHuge,
  kMixed
};
inline constexpr int kScenarios = 8;

inline const char* scenarioName(Scenario s) {
  static const char* names[] = {"normal",     "ties",      "signed-zeros", "infinities",
                                "subnormals", "ulp-apart", "huge",         "mixed"};
  return names[static_cast<int>(s)];
}

// One float according to the scenario; allowPlusInf = false keeps +inf out (softmax rows).
inline float drawFloat(std::mt19937_64& rng, Scenario sc, bool allowPlusInf = true) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f};
  switch (sc) {
    case Scenario::kNormal:
      return normal(rng);
    case Scenario::kTies:
      return pool[rng() % 6];
    case Scenario::kSignedZeros:
      return rng() % 2 ? 0.0f : -0.0f;
    case Scenario::kInfinities: {
      const auto r = rng() % 4;
      if (r == 0) return -INFINITY;
      if (r == 1 && allowPlusInf) return INFINITY;
      return normal(rng);
    }
    case Scenario::kSubnormals: {
      const float tiny = std::ldexp(static_cast<float>(rng() % 64), -149);
      return rng() % 2 ? tiny : -tiny;
    }
    case Scenario::kUlpApart: {
      float v = 1.0f;
      for (auto steps = rng() % 4; steps > 0; --steps) v = std::nextafter(v, 2.0f);
      return rng() % 5 == 0 ? -v : v;
    }
    case Scenario::kHuge: {
      const float big =
          std::ldexp(1.0f + static_cast<float>(rng() % 8) / 8, 120 + static_cast<int>(rng() % 7));
      return rng() % 2 ? big : -big;
    }
    case Scenario::kMixed:
    default:
      return drawFloat(rng, static_cast<Scenario>(rng() % 7), allowPlusInf);
  }
}

inline std::vector<float> drawFloats(std::mt19937_64& rng, std::size_t E, Scenario sc,
                                     bool allowPlusInf = true) {
  std::vector<float> v(E);
  for (auto& x : v) x = drawFloat(rng, sc, allowPlusInf);
  return v;
}

// Finite floats as exact rationals (every finite binary32 number is a rational).
inline std::vector<mpq_class> toRationals(const std::vector<float>& v) {
  std::vector<mpq_class> q;
  q.reserve(v.size());
  for (float x : v) q.emplace_back(std::isfinite(x) ? static_cast<double>(x) : 0.0);
  return q;
}

inline std::vector<double> toDoubles(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Text of a vector for failure messages: decimal and hex of every element.
template <class A>
std::string describe(const std::vector<A>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    if constexpr (std::is_same_v<A, mpq_class>) {
      out += v[i].get_str();
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g (%a)", static_cast<double>(v[i]),
                    static_cast<double>(v[i]));
      out += buf;
    }
  }
  return out + "]";
}

}  // namespace moe::oracle::testing
