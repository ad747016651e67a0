// The fused layer's verdict (moe_layer_v1; docs/fuzz.md "The fused layer"). Per token: the
// routing the kernel returned, judged by the router verdict, then y against the spec's
// sparse forward over the kernel's kept experts with its gates; a kernel that returns no
// routing must produce a y acceptable for some routing the router verdict accepts (the
// binary32 spec's, and the near-ties' swaps). The budget per coordinate is derived: a
// forward error bound of the binary32 dot products, SiLU and combine in any summation order.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/layer_kernel.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// One token's (or a call's) layer verdict. kind, token, expert and coordinate say what
// broke; expert is -1 where no experiment isolated one.
struct LayerVerdict {
  Outcome outcome = Outcome::kExact;
  std::string reason;  // acceptable: "near-tie-routing", "overflow", "nonreal-row", ...
  ViolationKind kind = ViolationKind::kNone;
  std::string tag;
  std::string certificate;
  int32_t token = -1, expert = -1, coordinate = -1;
  double margin = 0;  // worst |y - ref| / budget over the coordinates (<= 1 when acceptable)
};

// The reference and budget of one routing of one token: ref_c = sum_s g_s f_s(x)_c in
// binary64 and the binary32 budget b_c of docs/fuzz.md. overflow: some intermediate value
// of the binary32 evaluation may pass binary32's range (y is then not judged).
struct LayerReference {
  std::vector<int32_t> experts;  // the kept experts, slot order
  std::vector<double> gates;     // their gates
  std::vector<double> ref, budget;
  bool overflow = false;
};

// The budget's pieces for one expert on one token (binary64): the output f_c, the
// magnitude sum_h |W2_ch| (|h_h| + dh_h) and the propagated error sum_h |W2_ch| dh_h of
// the hidden activations h = silu(W1 x) * (W3 x), and sum_h (|W2_ch| + |h_h| + dh_h), the
// factors that may carry a product's underflow. docs/fuzz.md derives them.
struct ExpertTerms {
  std::vector<double> f, mag, dev, carriers;
  bool overflow = false;
};
ExpertTerms expertTerms(const LayerCase& c, int32_t t, int32_t e, double siluUlp);

// The routing's reference and budget from the experts' terms: `allowance` (per slot, may be
// empty) widens each gate (a routing the kernel did not return: its gates are known only
// within the router verdict's budget).
LayerReference combineReference(std::span<const int32_t> experts, std::span<const double> gates,
                                std::span<const ExpertTerms* const> terms,
                                std::span<const double> allowance, int32_t hidden,
                                int32_t intermediate, double factor);

// What a token's y is acceptable against when the layer returns no routing (a reproducer
// told as a program): each routing the router verdict accepts, with the spec's sparse
// forward over it and the budget per coordinate (its gates widened by their allowance). y
// is acceptable when it fits one of them. Empty when y is not judged there (a row without a
// ranking, a binary32 evaluation that may overflow, a near-tie group too large to try).
struct LayerTokenReference {
  std::vector<int32_t> experts;
  std::vector<double> gates, ref, budget;
};
std::vector<LayerTokenReference> layerTokenReferences(const LayerCase& c, int32_t t,
                                                      const Contract& contract, Judge& routeJudge);
// The same for the routing a layer returned for token t (its ids, -1 skipped, and gates
// exactly: what y is judged against when the routing is returned). overflow: y is not
// judged there.
LayerTokenReference layerRoutingReference(const LayerCase& c, int32_t t,
                                          std::span<const int32_t> ids,
                                          std::span<const float> gates, const Contract& contract,
                                          bool& overflow);

// Judges one token of a call's output (the routing judged by `routeJudge`).
LayerVerdict judgeLayerToken(const LayerCase& c, int32_t t, const LayerOutput& out,
                             const Contract& contract, Judge& routeJudge, const LayerRerun& rerun);

struct LayerCaseResult {
  bool abstained = false;
  std::string abstainReason;
  LayerOutput output;
  std::vector<LayerVerdict> tokens;       // one per token (until the first violation)
  std::optional<LayerVerdict> violation;  // the first violation, if any
  Outcome worst() const;
};

// The statuses layer_abi.h allows for the call (a bad call's, or a family outside its
// domain), with why; empty: the call is inside the domain. Any of several is right.
std::vector<DueStatus> layerDueStatuses(const LayerCase& c);
// The call's status judged: nullopt when it is inside the domain and returned 0 (or
// abstained: EUNSUPPORTED, EINTERNAL); else the verdict on the status alone: a call outside
// the domain passes (outcome exact) with a due status and y, ids, gates unwritten, and is
// bad-params-accepted, -wrong-status or -written otherwise; a call inside it answered with
// another status is bad-status.
std::optional<LayerVerdict> judgeLayerStatus(const LayerCase& c, const LayerOutput& out);

// Judges a call's whole output: a fault or a bad status first, then every token.
LayerCaseResult judgeLayerOutput(const LayerCase& c, LayerOutput out, const Contract& contract,
                                 Judge& routeJudge, const LayerRerun& rerun);

}  // namespace moe::fuzz
