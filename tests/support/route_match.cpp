// The judge behind EXPECT_ROUTE_MATCH: one fuzz::Judge run per check, text only on failure.
#include "moe/test/route_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "moe/fuzz/token_text.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/fuzz/violation_kind.hpp"

namespace moe::test {

fuzz::Case routeCase(int32_t tokens, int32_t experts, int32_t k, std::vector<float> logits,
                     int32_t threads) {
  fuzz::Case c;
  c.tokens = tokens;
  c.experts = experts;
  c.k = k;
  c.logits = std::move(logits);
  c.threads = threads;
  c.allowNaN = true;  // the logits are the test's, NaN included
  return c;
}

fuzz::Case familyCase(int32_t tokens, int32_t experts, int32_t k, std::vector<float> logits,
                      fuzz::Family family, int32_t threads) {
  fuzz::Case c = routeCase(tokens, experts, k, std::move(logits), threads);
  c.family = std::move(family);
  return c;
}

namespace {

// Rows longer than this show the experts that matter (the certificate's, the router's and the
// spec's kept ones), as the violation report does.
constexpr size_t kRowShown = 32;

// The token told as `moe-oracle explain` and the violation report tell it (token_text.hpp):
// the logits, the spec's kept set with exact probabilities and gates, the router's slots.
std::string tokenText(const fuzz::Case& c, const fuzz::RouteOutput& o, const fuzz::Verdict& v) {
  const size_t k = static_cast<size_t>(c.k), at = static_cast<size_t>(v.token) * k;
  const bool whole = at + k <= o.ids.size() && o.ids.size() == o.gates.size();
  const std::span<const int32_t> ids(o.ids);
  const std::span<const float> gates(o.gates);
  return fuzz::describeToken(
      c.row(v.token), c.family, c.k, whole ? ids.subspan(at, k) : std::span<const int32_t>(),
      whole ? gates.subspan(at, k) : std::span<const float>(), kRowShown,
      fuzz::expertsNamed(v.certificate, c.family, static_cast<size_t>(c.experts)));
}

::testing::AssertionResult judge(const char* routerText, const char* caseText,
                                 const fuzz::Router& router, const fuzz::Case& c, bool exactly) {
  fuzz::Judge judge;
  const fuzz::CaseResult r = judge.run(router, c);
  const fuzz::Verdict* failing = nullptr;
  if (r.violation) {
    failing = &*r.violation;
  } else if (exactly) {
    // The tokens kept whole: the others are exact, or non-real rows. A row that is not real
    // (NaN, +inf, all -inf) is only structure-checked by the judge: it has no exact decision
    // to require.
    for (const fuzz::Verdict& v : r.tokens.whole()) {
      if (v.outcome == fuzz::Outcome::kAcceptable && v.reason != "nonreal-row") {
        failing = &v;
        break;
      }
    }
  }
  if (failing == nullptr && !r.abstained) return ::testing::AssertionSuccess();

  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{}({}, {}): router {} on T = {}, E = {}, k = {}, threads = {}",
                 exactly ? "EXPECT_ROUTE_MATCH_EXACTLY" : "EXPECT_ROUTE_MATCH", routerText,
                 caseText, router.name(), c.tokens, c.experts, c.k, c.threads);
  if (r.abstained) {
    fmt::format_to(to, "\n  the router abstained ({}): nothing to judge", r.abstainReason);
    return ::testing::AssertionFailure() << fmt::to_string(out);
  }
  const fuzz::Verdict& v = *failing;
  if (v.outcome == fuzz::Outcome::kViolation) {
    fmt::format_to(to, "\n  token {}: violation {}{}{}\n  why: {}", v.token, fuzz::kindName(v.kind),
                   v.tag.empty() ? "" : " ", v.tag, v.certificate);
  } else {
    fmt::format_to(to,
                   "\n  token {}: acceptable only as {} (margin {:.3g} of the rounding budget); "
                   "the test built this input clear of near-ties and requires the spec's "
                   "decision exactly",
                   v.token, v.reason, v.margin);
  }
  if (v.token >= 0 && v.token < c.tokens) {
    fmt::format_to(to, "\n  token {} of {}:\n{}", v.token, c.tokens, tokenText(c, r.output, v));
  }
  return ::testing::AssertionFailure() << fmt::to_string(out);
}

}  // namespace

::testing::AssertionResult routeMatches(const char* routerText, const char* caseText,
                                        const fuzz::Router& router, const fuzz::Case& c) {
  return judge(routerText, caseText, router, c, false);
}

::testing::AssertionResult routeMatchesExactly(const char* routerText, const char* caseText,
                                               const fuzz::Router& router, const fuzz::Case& c) {
  return judge(routerText, caseText, router, c, true);
}

}  // namespace moe::test
