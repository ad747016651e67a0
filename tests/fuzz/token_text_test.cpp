// The violation report's token table on rows longer than it shows: the experts that matter
// to the finding, not the first 64.
#include "moe/fuzz/token_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace moe::fuzz {
namespace {

bool showsExpert(const std::string& table, size_t e) {
  return table.find("\n" + std::string(6 - std::to_string(e).size(), ' ') + std::to_string(e) +
                    " ") != std::string::npos;
}

TEST(TokenText, TheCertificateNamesTheExperts) {
  Family f;
  f.groups = 8;
  const auto named = expertsNamed(
      "group 2 is kept, but 1 lower-index groups (group 6) have exactly the same group score; "
      "experts 3 and 250 tie; expert 17",
      f, 256);
  for (size_t e :
       {size_t{64}, size_t{95}, size_t{192}, size_t{223}, size_t{3}, size_t{250}, size_t{17}}) {
    EXPECT_NE(std::find(named.begin(), named.end(), e), named.end()) << e;
  }
  EXPECT_EQ(std::find(named.begin(), named.end(), size_t{100}), named.end());
}

TEST(TokenText, ALongRowShowsTheExpertsThatMatter) {
  std::vector<float> x(256, 0.0f);
  x[200] = 5.0f;  // the spec keeps 200
  const std::vector<int32_t> ids = {130};
  const std::vector<float> gates = {1.0f};
  const std::vector<size_t> focus = {240};
  const std::string table = describeToken(x, std::nullopt, 1, ids, gates, 64, focus);
  EXPECT_TRUE(showsExpert(table, 240)) << table;  // named by the certificate
  EXPECT_TRUE(showsExpert(table, 130)) << table;  // the router's
  EXPECT_TRUE(showsExpert(table, 200)) << table;  // the spec's
  EXPECT_FALSE(showsExpert(table, 5)) << table;   // not the first 64 regardless
  EXPECT_NE(table.find("more experts in the case JSON"), std::string::npos);
  const std::string short8 = describeToken(std::vector<float>(8, 0.0f), std::nullopt, 1,
                                           std::vector<int32_t>{0}, gates, 64, focus);
  for (size_t e = 0; e < 8; ++e) EXPECT_TRUE(showsExpert(short8, e)) << short8;
}

}  // namespace
}  // namespace moe::fuzz
