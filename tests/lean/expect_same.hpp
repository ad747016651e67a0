// One vector computed by the oracle against the one Lean exported, an explanation per
// differing entry: rationals must be equal, floats the same bits (sameBits: any NaN matches
// any NaN). What every replay suite of this folder checks its results with.
#pragma once

#include <gmpxx.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lean_vectors.hpp"

namespace moe::lean {

template <class A>
bool sameValue(const A& a, const A& b) {
  if constexpr (std::is_same_v<A, mpq_class>) {
    return a == b;
  } else {
    return sameBits(a, b);
  }
}

template <class A>
std::string valueText(const A& x) {
  if constexpr (std::is_same_v<A, mpq_class>) {
    return x.get_str();
  } else {
    return hexOf(x);
  }
}

template <class A>
void expectSame(const json& t, std::string_view what, const std::vector<A>& actual,
                const std::vector<A>& expected) {
  ASSERT_EQ(actual.size(), expected.size()) << describe(t) << " " << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(sameValue(actual[i], expected[i]))
        << describe(t) << " " << what << "[" << i << "]: oracle " << valueText(actual[i])
        << ", Lean " << valueText(expected[i]);
  }
}

}  // namespace moe::lean
