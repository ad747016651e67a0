// Logits drawn like a trained router's (docs/fuzz.md, "Shapes and batch sizes"): kernels
// are judged on ordinary inputs too, not only on the adversarial values of the decoder.
#pragma once

#include "moe/fuzz/case.hpp"

namespace moe::fuzz {

// Fills c.logits (c.tokens x c.experts) with rows of Gaussian logits at a router's scale:
// a spread of 0.25 to 8 per token, a per-expert bias that some experts win by over every
// token (0 to one spread), a shift common to the batch (which a sigmoid's scores see),
// now and then rounded as a bf16 or fp16 matmul writes them (ties then come by
// themselves); half the cases get ties planted in half of their rows where they decide
// the routing: the k-th best against the next, or the best two.
void drawModelLogits(ByteSource& source, Case& c);

}  // namespace moe::fuzz
