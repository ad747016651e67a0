#pragma once
// Score vectors in each context: binary32, binary64 and exact rationals, drawn from the
// adversarial scenarios of test_support.hpp.
#include <gmpxx.h>

#include <type_traits>

#include "test_support.hpp"

namespace moe::oracle::testing {

template <class A>
std::vector<A> drawScores(std::mt19937_64& rng, std::size_t E, Scenario sc) {
  std::vector<float> f = drawFloats(rng, E, sc);
  if constexpr (std::is_same_v<A, float>) {
    return f;
  } else if constexpr (std::is_same_v<A, double>) {
    std::vector<double> d = toDoubles(f);
    // Values that tie in binary32 but not in binary64: a nudge of 2^-40 on some entries.
    for (auto& x : d) {
      if (std::isfinite(x) && rng() % 4 == 0) x += std::ldexp(1.0, -40);
    }
    return d;
  } else {
    std::vector<mpq_class> q = toRationals(f);
    for (auto& x : q) {
      if (rng() % 4 == 0) {
        x = mpq_class(static_cast<long>(rng() % 7) - 3, 1 + rng() % 3);
        x.canonicalize();  // GMP compares only canonical fractions correctly
      }
    }
    return q;
  }
}

using Contexts = ::testing::Types<float, double, mpq_class>;

}  // namespace moe::oracle::testing
