// One token told for a person: the table that the violation report (report.cpp) and
// `moe-oracle explain` (explain.cpp) both print, so that the two never tell a case two
// ways. A v1 case: each expert's logit, rank, the spec's kept set, the exact
// probability and gate, and the router's slot and gate. A v2 case (a routing family): the
// family's parameters, each expert's exact score, bias and biased key, its group, the
// groups' exact scores and which the spec keeps, the spec's kept experts and exact gates.
// Both end with the exact gates of the router's own kept set.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// ids and gates: the router's k slots for this token (empty: no output to tell). Rows of
// more than `maxShown` experts show those that matter, up to maxShown: `focus` first (the
// experts a certificate names: expertsNamed), then the router's kept experts, then the
// spec's kept ones and its first displaced one.
std::string describeToken(std::span<const float> x, const std::optional<Family>& family, int32_t k,
                          std::span<const int32_t> ids, std::span<const float> gates,
                          size_t maxShown = std::numeric_limits<size_t>::max(),
                          std::span<const size_t> focus = {});
// The token a verdict is about, as describeToken tells it: the experts its certificate
// names first, and the router's slots of that token when `output` holds every slot (a
// router that wrote a short output has none to tell). For the violation report and
// EXPECT_ROUTE_MATCH alike.
std::string describeVerdictToken(const Case& c, const RouteOutput& output, const Verdict& v,
                                 size_t maxShown);
// The experts a certificate names ("expert 12", "experts 3 and 7", and every member of a
// "group 6" of at most 32), for describeToken's focus.
std::vector<size_t> expertsNamed(std::string_view certificate, const std::optional<Family>& family,
                                 size_t E);

}  // namespace moe::fuzz
