// The family kernel's per-call state (route_family_simd.cpp): what depends only on the
// parameters and the target, set up once for every row: the kept count, whether the fast
// selection and the group network apply, and whether sigmoid rows are screened and by what
// margin. Re-included once per Highway target by route_family_simd.cpp, hence the toggle
// guard.
#if defined(MOE_IMPL_FAMILY_SETUP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_SETUP_INL_H_
#undef MOE_IMPL_FAMILY_SETUP_INL_H_
#else
#define MOE_IMPL_FAMILY_SETUP_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "family_groups-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "sigmoid_estimate-inl.h"
#include "simd_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

// The screened sigmoid rows (family_screen-inl.h) need the
// estimate and the group network.
#undef MOE_FAMILY_SCREEN
#if MOE_SIGMOID_ESTIMATE && MOE_GROUP_NETWORK
#define MOE_FAMILY_SCREEN 1
#else
#define MOE_FAMILY_SCREEN 0
#endif

// The most vectors a row's eligible experts may span for the fast selections (E <= 1024).
constexpr int32_t kMaxVectors = 64;

// The per-call state of Rows: what depends only on the parameters and the target.
struct RowsSetup {
  int32_t lanes, kk, size;
  bool alignedGroups, fastSelect;
  Rotations rot;
#if MOE_GROUP_NETWORK
  std::optional<GroupNetwork> network;
#endif
  // The screened sigmoid rows (DecideScreened): whether they apply, and delta, a bound on
  // |estimated key - key| with room for one rounding of a threshold.
  bool screen = false;
  float delta = 0.0f;
  double maxBias = 0.0;  // max |b| over the experts, 0 without a bias
  RowsSetup(D d, const FamilyParams& p, bool allowScreen)
      : lanes(static_cast<int32_t>(hn::Lanes(d))),
        kk(p.keptCount()),
        size(p.groupSize()),
        alignedGroups(p.groups > 1 && size % lanes == 0),
        // The fast selection ranks at most one vector of candidates: kk of at most half a
        // vector leaves room for ties and near-ties at the threshold.
        fastSelect(lanes >= 4 && (p.groups == 1 || alignedGroups) &&
                   (2 * kk <= lanes || (p.groups == 1 && p.experts <= lanes))),
        rot(hn::Lanes(d)) {
#if MOE_GROUP_NETWORK
    if (alignedGroups && p.groups <= 16) network.emplace(p.groups);
#endif
#if MOE_FAMILY_SCREEN
    if (allowScreen) setUpScreen(p);
#else
    (void)allowScreen;
#endif
  }

#if MOE_FAMILY_SCREEN
  // c = fl(s + b) and the estimate fl(s~ + b) differ by at most kSigmoidEstimateError and
  // the two roundings, each at most 2^-24 (1 + B + error) with B = max |b|; 2^-21 (2 + B)
  // covers them and the rounding of a threshold t - 2 delta (|t| <= 1 + B + 2 delta). A
  // large bias makes the screen coarse: past 1/64 it would seldom decide, so it is off.
  void setUpScreen(const FamilyParams& p) {
    // Below two vectors the exact rows are as fast (measured at E = 16). The argmax (k = 1)
    // was once left to them too, the per-token screen having measured no faster at Llama
    // 4's E = 128; the token-parallel kernel (lane_family-inl.h) is, 145 -> 45 ns a token
    // there, and past its 512 experts the per-token screen is too (E = 1,024: 843-1,009 ->
    // 424-427 ns; an Intel Xeon, one core, T = 65,536 and 8,192).
    if (!p.sigmoid || p.experts < 32 || p.experts % 16 != 0 || p.experts / 16 > kMaxVectors ||
        kk < 1 || 2 * kk > 16) {
      return;
    }
    if (p.groups > 1 && !network) return;
    if (p.bias != nullptr) {
      for (int32_t e = 0; e < p.experts; ++e) {
        maxBias = std::max(maxBias, std::fabs(double(p.bias[e])));
      }
    }
    const double bound = double(kSigmoidEstimateError) + std::ldexp(2.0 + maxBias, -21);
    if (!(bound < 1.0 / 64)) return;  // also a NaN or infinite bias
    delta = std::nextafter(static_cast<float>(bound), 1.0f);
    screen = true;
  }
#endif
};

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
