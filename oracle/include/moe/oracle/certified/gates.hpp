#pragma once
// Certified softmax probabilities and gates for binary32 logits, over the reals.
//
// The logits are binary32 numbers, hence real numbers; the enclosures bound the
// real-number spec: softmax_i = exp(l_i) / sum_j exp(l_j), gate_e = kept k l e ?
// exp(l_e) / sum_{j in S} exp(l_j) : 0, with S the experts kept on the logits
// (getScalar_gatesVecSpec_softmax and kept_softmax make this exact over the reals).
#include <cstddef>
#include <span>
#include <vector>

#include "moe/oracle/certified/interval.hpp"

namespace moe::oracle::certified {

// A row has a real-number softmax when no logit is NaN or +inf and, unless the row is
// empty, some logit is finite (-inf logits alone are fine: their probability is exactly 0).
bool isRealRow(std::span<const float> logits);

// Throws SpecError("not a real-number row ...") naming the offending index.
void requireRealRow(std::span<const float> logits);

// softmax of the whole row, E exponentials.
std::vector<Certified> softmaxEnclosure(std::span<const float> logits,
                                        const EnclosureOptions& options = {});

// Gates of a given kept set S, in keptSet's order: exp(l_e - m) / sum_{j in S} exp(l_j - m)
// with m = max over S; only |S| exponentials. S must be distinct in-range indices with at
// least one finite logit (the gates of S are 0/0 otherwise); S empty gives an empty result.
std::vector<Certified> keptGatesEnclosure(std::span<const float> logits,
                                          std::span<const std::size_t> keptSet,
                                          const EnclosureOptions& options = {});

// The full gate vector of gatesVecSpec k over the reals: length E, exact 0 off the kept set,
// the kept set taken from the logits (kept_softmax). min(k, E) exponentials.
std::vector<Certified> gatesEnclosure(std::size_t k, std::span<const float> logits,
                                      const EnclosureOptions& options = {});

}  // namespace moe::oracle::certified
