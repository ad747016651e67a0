// The memory-bandwidth roof: a plain vectorised read (and sum) of the same logits bytes,
// with Highway's dynamic dispatch, so the routers' GB/s can be read as a fraction of it.
#include <cstddef>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "read_roof.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "read_roof.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Four independent accumulators so the adds' latency does not cap the read rate.
float sumFloats(const float* data, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(d, data + i));
    a1 = hn::Add(a1, hn::LoadU(d, data + i + lanes));
    a2 = hn::Add(a2, hn::LoadU(d, data + i + 2 * lanes));
    a3 = hn::Add(a3, hn::LoadU(d, data + i + 3 * lanes));
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) sum += data[i];
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace moe::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::bench {
HWY_EXPORT(sumFloats);
float sumFloats(const float* data, size_t n) {
  return HWY_DYNAMIC_DISPATCH(sumFloats)(data, n);
}
}  // namespace moe::bench
#endif
