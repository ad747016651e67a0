#pragma once

#include <cstddef>

namespace moe::bench {
// Sum of data[0..n), read with the widest vectors this CPU has.
float sumFloats(const float* data, size_t n);
}  // namespace moe::bench
