// A structure-keeping custom mutator (libFuzzer builds only): decode the case, apply
// mutateCase (ties, ±1 ulp, specials, shapes at SIMD widths' edges), encode it again.
// One call in four falls back to libFuzzer's byte mutator, which finds odd bit patterns;
// every call does for inputs that are a family draw's stream (gFamilyStreamInput).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/mutate.hpp"
#include "target_common.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  using namespace moe::fuzz;
  if (seed % 4 == 0 || gFamilyStreamInput) return LLVMFuzzerMutate(data, size, maxSize);
  SeededSource rng(seed);
  // The targets' expert limit, so the mutator sees (and writes) the case the target runs.
  const int32_t maxExperts = maxExpertsFromEnv();
  Case c = decodeCase(std::span<const uint8_t>(data, size), maxExperts);
  mutateCase(c, rng, maxExperts);
  std::vector<uint8_t> bytes = encodeCase(c);
  if (bytes.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
