#pragma once

#include <cstddef>
#include <cstdint>

namespace moe::bench {
// Sum of data[0..n), read with the widest vectors this CPU has.
float sumFloats(const float* data, size_t n);
// Reads `tokens` rows of `experts` floats and writes k ids and k gates a token (16 tokens
// at a time; k * 16 a whole number of vectors): a router's memory traffic, no routing.
void readAndWrite(const float* data, size_t tokens, size_t experts, size_t k, int32_t* ids,
                  float* gates);
}  // namespace moe::bench
