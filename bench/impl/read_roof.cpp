// The memory-bandwidth roof: a plain vectorised read (and sum) of the same logits bytes,
// with Highway's dynamic dispatch, so the routers' GB/s can be read as a fraction of it.
// Also the read-and-write roof: the same read with a router's writes (k ids and k gates a
// token), which at small E are half as many bytes as the reads.
#include <cstddef>
#include <cstdint>

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

// Output lines made writable this many groups of 16 tokens ahead, as the routers do: a
// plain loop's stores wait on each line's read for ownership (E = 8, k = 2, buffers at 16
// bytes past a line as malloc gives them: 1.9 ns a token, 1.3 with these; the small-rows
// kernel, which does the same, took 1.5 and beat the plain loop).
constexpr size_t kWriteAhead = 32;

// The line `bytes` past `base`, asked for writable. The address is formed as an integer:
// past the buffers it is never dereferenced (a prefetch never faults), and a pointer past
// the end would be undefined.
HWY_INLINE void prefetchForWrite(const void* base, uintptr_t bytes) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the integer above is the point
  const auto* at = reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) + bytes);
#if HWY_ARCH_X86
  asm volatile("prefetchw %0" : : "m"(*at));
#else
  __builtin_prefetch(at, 1);
#endif
}

// Per 16 tokens: their rows summed, the sum stored over their 16 k ids and 16 k gates.
void readAndWrite(const float* data, size_t tokens, size_t experts, size_t k, int32_t* ids,
                  float* gates) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kGroup = 16;
  size_t t = 0;
  for (; t + kGroup <= tokens; t += kGroup) {
    const float* rows = data + t * experts;
    const uintptr_t ahead = (t + kWriteAhead * kGroup) * k * sizeof(float);
    for (uintptr_t line = 0; line < kGroup * k * sizeof(float); line += 64) {
      prefetchForWrite(ids, ahead + line);
      prefetchForWrite(gates, ahead + line);
    }
    auto acc = hn::Zero(d);
    size_t i = 0;
    for (; i + lanes <= kGroup * experts; i += lanes) acc = hn::Add(acc, hn::LoadU(d, rows + i));
    for (; i < kGroup * experts; ++i) acc = hn::Add(acc, hn::Set(d, rows[i]));
    for (size_t o = 0; o < kGroup * k; o += lanes) {
      hn::StoreU(acc, d, gates + t * k + o);
      hn::StoreU(hn::BitCast(di, acc), di, ids + t * k + o);
    }
  }
  for (; t < tokens; ++t) {
    for (size_t s = 0; s < k; ++s) {
      gates[t * k + s] = data[t * experts];
      ids[t * k + s] = 0;
    }
  }
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
HWY_EXPORT(readAndWrite);
void readAndWrite(const float* data, size_t tokens, size_t experts, size_t k, int32_t* ids,
                  float* gates) {
  HWY_DYNAMIC_DISPATCH(readAndWrite)(data, tokens, experts, k, ids, gates);
}
}  // namespace moe::bench
#endif
