#pragma once
// Spec.MoE routing: beats, rank, kept, keptExperts, and the StrictWeak check.
//
// The literal transliterations (`beats`, `rank`, `kept`) are total, as in Lean: they never
// throw on NaN, they just compare. The fast entry points (`ranks`, `keptExperts`,
// `keptMask`) sort by the `beats` order in O(E log E) and reject NaN scores with a
// SpecError naming the index, because NaN lies outside StrictWeak and a sort by a
// comparator that is not a strict weak order is undefined behaviour.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "moe/oracle/context.hpp"
#include "moe/oracle/error.hpp"

namespace moe::oracle {

// Throws SpecError naming the first index whose score is NaN (outside StrictWeak).
template <class A>
void requireNoNaN(std::span<const A> s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (Context<A>::isNaN(s[i])) {
      throw SpecError("NaN score at index " + std::to_string(i) + " of " +
                      std::to_string(s.size()) + " (NaN is outside StrictWeak)");
    }
  }
}

inline void requireIndex(const char* what, std::size_t i, std::size_t n) {
  if (i >= n) {
    throw SpecError(std::string(what) + ": index " + std::to_string(i) + " out of range for " +
                    std::to_string(n) + " experts");
  }
}

// Lean: Spec.MoE.beats — serves beats_eq_true, beats_self, beats_total, beats_trans
// j outranks i: a strictly larger score, or an exact tie broken towards the lower index.
template <class A>
bool beats(std::span<const A> s, std::size_t j, std::size_t i) {
  requireIndex("beats", j, s.size());
  requireIndex("beats", i, s.size());
  using C = Context<A>;
  return C::gtBool(s[j], s[i]) || (j < i && !C::gtBool(s[i], s[j]));
}

// Lean: Spec.MoE.rank — serves rank_lt, rank_lt_rank, rank_injective
// The literal O(E) count of experts that beat i (0 = best); all ranks this way are O(E^2).
template <class A>
std::size_t rank(std::span<const A> s, std::size_t i) {
  requireIndex("rank", i, s.size());
  std::size_t count = 0;
  for (std::size_t j = 0; j < s.size(); ++j) count += beats(s, j, i) ? 1 : 0;
  return count;
}

// Lean: Spec.MoE.kept — serves card_kept, beats_of_kept, kept_dominates, kept_congr
template <class A>
bool kept(std::size_t k, std::span<const A> s, std::size_t i) {
  return rank(s, i) < k;
}

// The `beats` order as a strict "comes first" comparator on indices; a strict total order
// on indices whenever the scores satisfy StrictWeak (beats_total, beats_trans).
template <class A>
struct BeatsOrder {
  std::span<const A> s;
  bool operator()(std::size_t j, std::size_t i) const {
    using C = Context<A>;
    return C::gtBool(s[j], s[i]) || (j < i && !C::gtBool(s[i], s[j]));
  }
};

// Lean: Spec.MoE.rank (all experts at once) — equals rank(s, i) for every i; O(E log E).
template <class A>
std::vector<std::size_t> ranks(std::span<const A> s) {
  requireNoNaN(s);
  std::vector<std::size_t> order(s.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), BeatsOrder<A>{s});
  std::vector<std::size_t> r(s.size());
  for (std::size_t pos = 0; pos < order.size(); ++pos) r[order[pos]] = pos;
  return r;
}

// Lean: Spec.MoE.keptExperts — serves length_keptExperts
// The kept experts best first (this project's fixed order), length min(k, E). For small k
// a single pass keeps the best k in a sorted buffer (O(E k) worst case, about E
// comparisons for typical scores); otherwise selection then a sort of the prefix,
// O(E + k log k). Both order by `beats`.
template <class A>
std::vector<std::size_t> keptExperts(std::size_t k, std::span<const A> s) {
  requireNoNaN(s);
  const std::size_t n = std::min(k, s.size());
  const BeatsOrder<A> before{s};
  std::vector<std::size_t> order;
  if (n <= 16) {
    order.reserve(n);
    for (std::size_t i = 0; i < s.size(); ++i) {
      // i has the largest index so far, so it beats a kept j only with a larger score.
      if (order.size() == n && (n == 0 || !before(i, order.back()))) continue;
      if (order.size() == n) order.pop_back();
      std::size_t pos = order.size();
      while (pos > 0 && before(i, order[pos - 1])) --pos;
      order.insert(order.begin() + static_cast<std::ptrdiff_t>(pos), i);
    }
    return order;
  }
  order.resize(s.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (n < order.size()) {
    std::nth_element(order.begin(), order.begin() + n, order.end(), before);
  }
  std::sort(order.begin(), order.begin() + n, before);
  order.resize(n);
  return order;
}

// Lean: Spec.MoE.kept (all experts at once) — mask[i] == kept(k, s, i); O(E + k log k).
template <class A>
std::vector<bool> keptMask(std::size_t k, std::span<const A> s) {
  std::vector<bool> mask(s.size(), false);
  for (std::size_t i : keptExperts(k, s)) mask[i] = true;
  return mask;
}

// The literal Lean ranking of every expert (O(E^2)), total on any input including NaN:
// used where the spec's binary32 value is the reference for rows that are not real.
template <class A>
std::vector<bool> keptMaskLiteral(std::size_t k, std::span<const A> s) {
  std::vector<bool> mask(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) mask[i] = kept(k, s, i);
  return mask;
}

// Lean: Spec.MoE.keptExperts (literal) — serves length_keptExperts
// Lean's definition word for word, total on any input including NaN: for each position
// r < min(k, E), the first expert (lowest index) whose literal rank is r; positions that
// no expert holds are skipped. Under StrictWeak the ranks are a permutation of 0..E-1 and
// this equals keptExperts(k, s). Outside it (NaN) ranks may repeat or be missing: scores
// [0, NaN, 1] have ranks [1, 1, 1], so k = 2 gives [0], as Lean does. O(E^2).
template <class A>
std::vector<std::size_t> keptExpertsLiteral(std::size_t k, std::span<const A> s) {
  std::vector<std::size_t> r(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) r[i] = rank(s, i);
  std::vector<std::size_t> out;
  for (std::size_t pos = 0; pos < std::min(k, s.size()); ++pos) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (r[i] == pos) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

// What StrictWeak(s) found: ok, or the first failing axiom and its indices.
struct StrictWeakReport {
  bool ok = true;
  std::string axiom;  // "irrefl", "trans" or "split"
  std::size_t a = 0, b = 0, c = 0;
  std::string message() const {
    if (ok) return "StrictWeak holds";
    if (axiom == "irrefl") return "irrefl fails: scores[" + std::to_string(a) + "] > itself";
    return axiom + " fails at a=" + std::to_string(a) + " b=" + std::to_string(b) +
           " c=" + std::to_string(c);
  }
};

namespace detail {
// Searches the three axioms literally for a witness; O(E^3) worst case, run only after the
// O(E^2) check below has already found that the order is broken.
template <class A>
StrictWeakReport findStrictWeakWitness(std::span<const A> s) {
  using C = Context<A>;
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (C::gtBool(s[i], s[i])) return {false, "irrefl", i, i, i};
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t c = 0; c < n; ++c) {
      if (!C::gtBool(s[a], s[c])) continue;
      for (std::size_t b = 0; b < n; ++b) {
        if (!C::gtBool(s[a], s[b]) && !C::gtBool(s[b], s[c])) return {false, "split", a, b, c};
      }
    }
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (!C::gtBool(s[a], s[b])) continue;
      for (std::size_t c = 0; c < n; ++c) {
        if (C::gtBool(s[b], s[c]) && !C::gtBool(s[a], s[c])) return {false, "trans", a, b, c};
      }
    }
  }
  return {};
}
}  // namespace detail

// Lean: StrictWeak, the premise of the seeds' routing theorems about Spec.MoE.beats (the
// #guards of Spec.MoE.Checks in lean-traces/Spec.lean check them) — serves strictWeak_real
// and every routing theorem
// O(E^2): sort by a stable merge sort on `>`, then check that the sorted indices form
// blocks of mutually incomparable scores with every earlier block strictly above every
// later one. That is exactly a strict weak order; otherwise find a failing axiom.
template <class A>
StrictWeakReport StrictWeak(std::span<const A> s) {
  using C = Context<A>;
  const std::size_t n = s.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // A merge sort only ever compares, so it terminates with some permutation even when
  // `>` is not a strict weak order (unlike std::sort, whose behaviour is then undefined).
  std::vector<std::size_t> tmp(n);
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      std::size_t x = lo, y = mid, out = lo;
      while (x < mid && y < hi) {
        tmp[out++] = C::gtBool(s[order[y]], s[order[x]]) ? order[y++] : order[x++];
      }
      while (x < mid) tmp[out++] = order[x++];
      while (y < hi) tmp[out++] = order[y++];
    }
    order.swap(tmp);
  }
  std::vector<std::size_t> block(n);
  for (std::size_t p = 1; p < n; ++p) {
    block[p] = block[p - 1] + (C::gtBool(s[order[p - 1]], s[order[p]]) ? 1 : 0);
  }
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t q = 0; q < n; ++q) {
      const bool expected = block[p] < block[q];
      if (C::gtBool(s[order[p]], s[order[q]]) != expected) return detail::findStrictWeakWitness(s);
    }
  }
  return {};
}

}  // namespace moe::oracle
