// The statuses of a fused layer call (layer_abi.h): a call outside the domain owes the
// status the ABI gives for it with y, ids and gates as they were given (the sentinels
// LayerKernel::run fills them with); a call inside it owes 0 (or an abstention: it lacks the
// shape, or memory). The kinds are the router door's: bad-params-accepted,
// bad-params-wrong-status, bad-params-written, bad-status.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/fuzz/layer_verdict.hpp"
#include "moe/fuzz/route_status.hpp"

namespace moe::fuzz {

namespace {

constexpr uint32_t kSentinel = 0x7fa00000u;      // LayerKernel::run's signalling NaN
constexpr double kMaxBytes = 281474976710656.0;  // 2^48: layer_abi.h's EOVERFLOW

LayerVerdict statusViolation(ViolationKind kind, std::string certificate, std::string tag = {}) {
  LayerVerdict v;
  v.outcome = Outcome::kViolation;
  v.kind = kind;
  v.certificate = std::move(certificate);
  v.tag = std::move(tag);
  return v;
}

// The first value of y, ids or gates the call changed, or "".
std::string firstWritten(const LayerCase& c, const LayerOutput& out) {
  for (size_t i = 0; i < out.y.size(); ++i) {
    if (std::bit_cast<uint32_t>(out.y[i]) != kSentinel) {
      return fmt::format("y[{}] (token {}) = {:.9g}", i, c.hidden > 0 ? i / c.hidden : 0, out.y[i]);
    }
  }
  for (size_t s = 0; s < out.ids.size(); ++s) {
    if (out.ids[s] != -2) return fmt::format("ids[{}] = {}", s, out.ids[s]);
  }
  for (size_t s = 0; s < out.gates.size(); ++s) {
    if (std::bit_cast<uint32_t>(out.gates[s]) != kSentinel) {
      return fmt::format("gates[{}] = {:.9g}", s, out.gates[s]);
    }
  }
  return "";
}

}  // namespace

std::vector<DueStatus> layerDueStatuses(const LayerCase& c) {
  std::vector<DueStatus> due;
  const LayerCallParams p = layerCallParams(c);
  if (p.structShort > 0) {
    due.push_back({MOE_ROUTE_EBADPARAMS, fmt::format("struct_size is {} bytes short of "
                                                     "sizeof(moe_layer_params_v1)",
                                                     p.structShort)});
  }
  if (p.tokens < 0 || p.hidden < 0 || p.intermediate < 0 || p.experts < 0 || p.k < 0) {
    due.push_back(
        {MOE_ROUTE_EBADSIZE, fmt::format("a negative size (tokens {}, hidden {}, intermediate {}, "
                                         "experts {}, k {})",
                                         p.tokens, p.hidden, p.intermediate, p.experts, p.k)});
    return due;  // the other checks read the sizes
  }
  if (p.activation != 0) {
    due.push_back({MOE_ROUTE_EBADPARAMS,
                   fmt::format("activation = {}, not MOE_ACT_SWIGLU (0)", p.activation)});
  }
  if (p.dtype != 0 && p.dtype != 1) {
    due.push_back(
        {MOE_ROUTE_EBADPARAMS,
         fmt::format("dtype = {}, neither MOE_DTYPE_F32 (0) nor MOE_DTYPE_BF16 (1)", p.dtype)});
  }
  const double T = p.tokens, H = p.hidden, I = p.intermediate, E = p.experts;
  const auto nullHolding = [&](bool isNull, double values, const char* name) {
    if (isNull && values > 0) {
      due.push_back(
          {MOE_ROUTE_ENULL, fmt::format("{} is NULL and holds {:.0f} values", name, values)});
    }
  };
  nullHolding(p.nullX, T * H, "x");
  nullHolding(p.nullLogits, T * E, "logits");
  nullHolding(p.nullW13, E * 2 * I * H, "w13");
  nullHolding(p.nullW2, E * H * I, "w2");
  nullHolding(p.nullY, T * H, "y");
  const double weightBytes = E * 3 * I * H * 4, batchBytes = T * (H + E) * 4;
  if (weightBytes > kMaxBytes || batchBytes > kMaxBytes) {
    due.push_back(
        {MOE_ROUTE_EOVERFLOW, fmt::format("the byte counts ({:.4g} of weights, {:.4g} of x and "
                                          "logits) pass 2^48",
                                          weightBytes, batchBytes)});
  }
  if (c.family) {
    const std::string why = familyInvalidReason(*c.family, c.experts);
    if (!why.empty()) {
      due.push_back({MOE_ROUTE_EBADPARAMS, fmt::format("route outside the family's domain ({}: {})",
                                                       familyText(*c.family), why)});
    }
  }
  return due;
}

std::optional<LayerVerdict> judgeLayerStatus(const LayerCase& c, const LayerOutput& out) {
  const std::vector<DueStatus> due = layerDueStatuses(c);
  if (due.empty()) {
    if (out.status == MOE_ROUTE_OK || out.status == MOE_ROUTE_EUNSUPPORTED ||
        out.status == MOE_ROUTE_EINTERNAL) {
      return std::nullopt;
    }
    return statusViolation(ViolationKind::kBadStatus,
                           fmt::format("returned {} on a call inside the domain ({})",
                                       dispatchStatusText(out.status), layerShapeText(c)),
                           fmt::format("status-{}", out.status));
  }
  if (auto f = judgeRefusal(due, out.status, layerShapeText(c))) {
    return statusViolation(f->kind, std::move(f->certificate), std::move(f->tag));
  }
  const std::string written = firstWritten(c, out);
  if (!written.empty()) {
    return statusViolation(ViolationKind::kBadParamsWritten,
                           fmt::format("returned {} ({}) but wrote {}; layer_abi.h: nothing "
                                       "written on any error",
                                       dispatchStatusText(out.status), dueReasons(due), written));
  }
  LayerVerdict pass;
  pass.outcome = Outcome::kExact;
  pass.reason = "status";
  return pass;
}

}  // namespace moe::fuzz
