// Context: Lean's scalar operations in each instance; exp exists only where it should.
#include "moe/oracle/context.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

namespace moe::oracle {
namespace {

static_assert(HasExp<float>);
static_assert(HasExp<double>);
static_assert(!HasExp<mpq_class>, "exact rationals have no exp: softmax must not compile");

TEST(Context, MaxIsLeansMaxOfLe) {
  // maxOfLe x y = if x <= y then y else x: with +0 and -0 the second argument wins.
  EXPECT_TRUE(std::signbit(Context<float>::max(0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(Context<float>::max(-0.0f, 0.0f)));
  EXPECT_EQ(Context<double>::max(1.0, 2.0), 2.0);
  EXPECT_EQ(Context<double>::max(-INFINITY, -1.0), -1.0);
  EXPECT_EQ(Context<mpq_class>::max(mpq_class(1, 3), mpq_class(1, 2)), mpq_class(1, 2));
}

TEST(Context, GtBoolIsStrictGreater) {
  EXPECT_FALSE(Context<float>::gtBool(0.0f, -0.0f));
  EXPECT_FALSE(Context<float>::gtBool(NAN, 1.0f));
  EXPECT_FALSE(Context<float>::gtBool(1.0f, NAN));
  EXPECT_TRUE(Context<float>::gtBool(INFINITY, 1.0f));
  EXPECT_TRUE(Context<mpq_class>::gtBool(mpq_class(2, 3), mpq_class(1, 2)));
}

TEST(Context, ExpIsTheHostsExp) {
  EXPECT_EQ(Context<float>::exp(1.0f), std::exp(1.0f));
  EXPECT_EQ(Context<double>::exp(1.0), std::exp(1.0));
  EXPECT_EQ(Context<float>::exp(0.0f), 1.0f);
}

TEST(Context, RationalDivisionByZeroIsZeroAsInLean) {
  EXPECT_EQ(Context<mpq_class>::div(mpq_class(3), mpq_class(0)), mpq_class(0));
  EXPECT_EQ(Context<mpq_class>::div(mpq_class(3), mpq_class(4)), mpq_class(3, 4));
  EXPECT_TRUE(std::isinf(Context<float>::div(1.0f, 0.0f)));
}

}  // namespace
}  // namespace moe::oracle
