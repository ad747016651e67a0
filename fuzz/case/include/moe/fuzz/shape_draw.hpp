// How the campaign's generator (drawCase) picks a case's shape inside the run's shape space,
// and whether the case's logits are drawn like a model's or adversarially (docs/fuzz.md,
// "Shapes and batch sizes"). A run is worth the tokens it judges where kernels break, so
// the draw has three kinds of case:
//   - a model shape (1 case in 2): a model's (E, k) (model_shapes.hpp), or E one of their
//     neighbours or anywhere in 8..512, k in 1..10, T from 16 up (a prefill, a batched
//     decode step); half of them with model-like logits;
//   - a kernel edge (7 in 16): E, k and T adversarially (boundary sizes, range ends,
//     multiples of 16, 32 and 128 plus or minus one, log-uniform), k in 1..E; a quarter of
//     them with model-like logits;
//   - a degenerate shape (1 in 16): T = 0, E = 0, E = 1, k = 0 or k > E, on few tokens.
// Every case lies inside the space: a kind the space holds no case of gives way to one it
// holds (a kernel that supports only E = 4 gets every case at E = 4).
#pragma once

#include <cstdint>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

struct DrawnShape {
  int32_t experts = 1, k = 1, tokens = 1;
  bool modelLike = false;  // the logits drawn like a model's (model_logits.hpp)
};

DrawnShape drawShape(ByteSource& source, const ShapeSpace& space);

// One member of `set` (not empty), adversarially: a boundary size, a range end, a multiple
// of 16, 32 or 128 plus or minus one, else log-uniform.
int64_t drawFrom(ByteSource& source, const IntSet& set);

}  // namespace moe::fuzz
