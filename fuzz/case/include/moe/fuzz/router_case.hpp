// The case a router gets, decided in ONE place from its contract: a moe_route_v2 router
// gets the routing family's cases (drawFamilyCase, only the families its contract lists), a
// moe_route_v1 router the top-k cases. `moe-oracle fuzz` draws through the first overload,
// fuzz_external and `moe-oracle reproduce` decode libFuzzer inputs through the second, so
// that an input fuzz_external found on a library decodes to the same case in reproduce.
#pragma once

#include <cstdint>
#include <span>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

// The campaign's case for this router: drawFamilyCase for a v2 contract, else drawCase,
// within `space`.
Case routerCase(ByteSource& source, const Contract& contract, const ShapeSpace& space);

// The shapes a libFuzzer input decodes to for a v2 router: the contract's "shapes" within
// the decoder's limits (E in 1..maxExperts, T in 1..kMaxTokens). Throws
// std::invalid_argument when the contract's shapes leave no case there.
ShapeSpace inputShapeSpace(const Contract& contract, int32_t maxExperts);

// A libFuzzer input's case for this router. v1: decodeCase, the compact byte layout (so
// corpora and the custom mutator's encodings keep their meaning). v2: the bytes are read as
// the stream routerCase draws from (zeros once exhausted) over inputShapeSpace, then the
// batch is cut to kMaxLogits logits as the decoder's is (an exec stays cheap). Throws as
// inputShapeSpace.
Case routerCase(std::span<const uint8_t> input, const Contract& contract, int32_t maxExperts);

}  // namespace moe::fuzz
