// The registry of built-in routers: name, contract, availability, entry point.
#include "moe/routers.hpp"

#include <array>
#include <string>

#include "moe/detail/route_kernels.hpp"
#include "route_contracts.hpp"

namespace moe {
namespace {

using detail::RouteMode;
using detail::RowsFn;

bool always() {
  return true;
}

template <RowsFn kRows, bool (*kAvailable)()>
int routeWith(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
              float* gates, int32_t threads) {
  if (!kAvailable()) return MOE_ROUTE_EUNSUPPORTED;
  return detail::runRows(kRows, tokens, experts, k, logits, ids, gates, threads);
}

template <detail::FamilyRowsFn kRows, bool (*kAvailable)()>
int routeV2With(const moe_route_params_v2* p, const float* logits, int32_t* ids, float* gates,
                int32_t threads) {
  // Parameters first: EBADPARAMS and friends do not depend on the CPU.
  detail::FamilyParams checked;
  if (const int rc = detail::checkParamsV2(p, logits, ids, gates, &checked); rc != 0) return rc;
  if (!kAvailable()) return MOE_ROUTE_EUNSUPPORTED;
  return detail::runRowsV2(kRows, p, logits, ids, gates, threads);
}

// exp_max_ulp: glibc's expf (scalar; 0.5016 measured, 0.502 documented by glibc) and
// Highway's Exp (1.0316 measured on AVX-512 over every float in [-104, 0], all arguments
// x - max can take below the underflow to 0; tests/impl/exp_ulp_test.cpp re-checks it).
constexpr double kHostExpUlp = 0.502;
constexpr double kHwyExpUlp = 1.04;
// The AVX-512 kernels also use their own exp (fast_exp-inl.h): 1.0593 measured over every
// float in [-104, 0] (exp_ulp_test.cpp, FastExpAvx512, MOE_EXP_SWEEP_STRIDE=1). The auto
// routers may dispatch to those kernels, so they claim it too.
constexpr double kAvx512ExpUlp = 1.06;
// gate ulp: docs/impl.md, "Gate budget". scalar-probs is the binary32 spec itself.
constexpr int kScalarProbsGateUlp = 0;
constexpr int kGateUlp = 39;
// v2 gate ulp, in the terms of docs/impl.md's "Gate budget" (u = 2^-24; c ulp of exp is
// 2cu relative). A sigmoid score 1 / (1 + t) or t / (1 + t), t = exp(-|x|): the exp
// (2cu, carried at most whole), the add (u), the division (u): at most (2c + 2)u, and
// (4c + 2)u when t is in the numerator too. A renormalised gate s / S * scale: the
// numerator, the kept sum of kk terms ((4c + 2)u + (kk - 1)u), the division and the scale
// (2u): (8c + kk + 5)u; c = 1.06 and kk = 8: 21.5u. The binary32 spec's own non-shared
// part with c = 0.502 (its sigmoid has the exp in the denominator only): (2c + 2)u per
// score, (4c + 4 + kk - 1 + 2)u = 15u per gate, twice: 30u. N = 21.5 + 30, so 56 (with
// room); beyond kk = 8 the sum grows by 3 ulp per expert, as for v1. Raw softmax gates
// (not renormalised) divide by a sum over all E in another order: the verdict's E term.
// The scalar v2 is the binary32 spec op by op with the host expf: 0.
constexpr int kScalarFamilyGateUlp = 0;
constexpr int kFamilyGateUlp = 56;

struct Entry {
  detail::ContractFacts facts;
  bool (*available)();
  RouteFn route;
  detail::ContractFacts familyFacts;
  RouteV2Fn routeV2;
};

// The table, one entry per line of builtin_routers.def (the one list of routers).
#define MOE_ROUTER(name, available, rows, mode, expUlp, gateUlp, familyRows, familyGateUlp) \
  Entry{{name, RouteMode::mode, expUlp, gateUlp},                                           \
        available,                                                                          \
        routeWith<rows, available>,                                                         \
        {name, RouteMode::kFamily, expUlp, familyGateUlp},                                  \
        routeV2With<familyRows, available>},
constexpr std::array kEntries{
#include "builtin_routers.def"
};
#undef MOE_ROUTER

struct Registry {
  std::array<std::string, kEntries.size()> contracts;
  std::array<std::string, kEntries.size()> familyContracts;
  std::array<BuiltinRouter, kEntries.size()> routers;
  Registry() {
    for (size_t i = 0; i < kEntries.size(); ++i) {
      contracts[i] = detail::contractJson(kEntries[i].facts);
      familyContracts[i] = detail::contractJson(kEntries[i].familyFacts);
      routers[i] = BuiltinRouter{kEntries[i].facts.name, contracts[i],       kEntries[i].available,
                                 kEntries[i].route,      familyContracts[i], kEntries[i].routeV2};
    }
  }
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

}  // namespace

std::span<const BuiltinRouter> builtinRouters() {
  return registry().routers;
}

const BuiltinRouter* findRouter(std::string_view name) {
  for (const auto& router : builtinRouters()) {
    if (router.name == name) return &router;
  }
  return nullptr;
}

}  // namespace moe
