// The judge behind EXPECT_ROUTE_MATCH: one fuzz::Judge run per check, text only on failure.
#include "moe/test/route_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "moe/fuzz/float_bits.hpp"
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

namespace {

// Rows longer than this are summarised: the certificate names the experts that matter.
constexpr int32_t kRowShown = 32;

// The token's logits, the router's ids and gates: what the certificate speaks about.
void describeToken(fmt::memory_buffer& out, const fuzz::Case& c, const fuzz::RouteOutput& o,
                   int32_t t) {
  auto to = std::back_inserter(out);
  const auto x = c.row(t);
  if (c.experts <= kRowShown) {
    fmt::format_to(to, "\n  logits of token {}:", t);
    for (int32_t e = 0; e < c.experts; ++e) {
      fmt::format_to(to, " [{}] {} ({})", e, fuzz::decimal32(x[e]), fuzz::hex32(x[e]));
    }
  } else {
    fmt::format_to(to, "\n  logits of token {}: {} values (rows over {} are not printed)", t,
                   c.experts, kRowShown);
  }
  const size_t k = static_cast<size_t>(c.k), at = static_cast<size_t>(t) * k;
  if (at + k > o.ids.size()) return;
  fmt::format_to(to, "\n  router's slots of token {}:", t);
  for (size_t s = 0; s < k; ++s) {
    fmt::format_to(to, " [{}] id {} gate {} ({})", s, o.ids[at + s],
                   fuzz::decimal32(o.gates[at + s]), fuzz::hex32(o.gates[at + s]));
  }
}

::testing::AssertionResult judge(const char* routerText, const char* caseText,
                                 const fuzz::Router& router, const fuzz::Case& c, bool exactly) {
  fuzz::Judge judge;
  const fuzz::CaseResult r = judge.run(router, c);
  const fuzz::Verdict* failing = nullptr;
  if (r.violation) {
    failing = &*r.violation;
  } else if (exactly) {
    for (const fuzz::Verdict& v : r.tokens) {
      // A row that is not real (NaN, +inf, all -inf) is only structure-checked by the judge:
      // it has no exact decision to require.
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
  if (v.token >= 0 && v.token < c.tokens) describeToken(out, c, r.output, v.token);
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
