#pragma once
// Relabelling experts by a permutation e : Fin E ≃ Fin E (seed moe-gate-permute:
// gate (s ∘ e) i = gate s (e i)).
#include <cstddef>
#include <span>
#include <vector>

#include "moe/oracle/error.hpp"
#include "moe/oracle/routing.hpp"

namespace moe::oracle {

// Throws SpecError unless perm is a permutation of 0..n-1 of length n.
inline void requirePermutation(std::span<const std::size_t> perm, std::size_t n) {
  requireSameSize("permutation vs experts", perm.size(), n);
  std::vector<bool> seen(n, false);
  for (std::size_t k = 0; k < n; ++k) {
    if (perm[k] >= n || seen[perm[k]]) {
      throw SpecError("not a permutation: entry " + std::to_string(k) + " = " +
                      std::to_string(perm[k]) + " (out of range or repeated)");
    }
    seen[perm[k]] = true;
  }
}

// Lean: fun k => s (e k) (s ∘ e) — serves moe-gate-permute
template <class A>
std::vector<A> relabel(std::span<const A> s, std::span<const std::size_t> perm) {
  requirePermutation(perm, s.size());
  std::vector<A> t;
  t.reserve(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) t.push_back(s[perm[k]]);
  return t;
}

// The inverse permutation: inverse[perm[k]] = k.
inline std::vector<std::size_t> inversePermutation(std::span<const std::size_t> perm) {
  requirePermutation(perm, perm.size());
  std::vector<std::size_t> inv(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) inv[perm[k]] = k;
  return inv;
}

// True when no exact tie straddles the top-k boundary, i.e. the kept set does not depend
// on the index tie-break, so relabelling the experts relabels the kept set and the gates.
// Scores must be NaN-free (SpecError otherwise).
template <class A>
bool noTieAtKeptBoundary(std::size_t k, std::span<const A> s) {
  if (k == 0 || k >= s.size()) return true;
  const std::vector<std::size_t> order = keptExperts(k + 1, s);
  // order[k-1] is the last kept, order[k] the first displaced: they must not tie.
  return Context<A>::gtBool(s[order[k - 1]], s[order[k]]);
}

}  // namespace moe::oracle
