#include "moe/fuzz/dispatch_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "moe/fuzz/route_status.hpp"
#include "moe/oracle/dispatch.hpp"

namespace moe::fuzz {

namespace {

DispatchVerdict violation(ViolationKind kind, std::string certificate, std::string tag = {}) {
  DispatchVerdict v;
  v.kind = kind;
  v.certificate = std::move(certificate);
  v.tag = std::move(tag);
  return v;
}

std::string slotText(const DispatchCase& c, int64_t s) {
  return c.k > 0 ? fmt::format("slot {} (token {}, j {})", s, s / c.k, s % c.k)
                 : fmt::format("slot {}", s);
}

std::string valueText(int32_t v) {
  return v == kDispatchUnwritten ? fmt::format("{} (left unwritten)", v) : fmt::format("{}", v);
}

// The statuses: success when none is due; a due error answered by one of its statuses with
// nothing written; never a status outside the ABI's.
std::optional<DispatchVerdict> judgeStatus(const DispatchCase& c, const DispatchOutput& out) {
  if (out.status < MOE_ROUTE_OK || out.status > MOE_ROUTE_EBADPARAMS) {
    return violation(ViolationKind::kBadStatus,
                     fmt::format("returned {}, a status moe_dispatch_v1 does not define ({})",
                                 out.status, dispatchShapeText(c)),
                     fmt::format("status-{}", out.status));
  }
  const std::vector<DueStatus> due = dueStatuses(c);
  if (due.empty()) {
    if (out.status == MOE_ROUTE_EUNSUPPORTED || out.status == MOE_ROUTE_EINTERNAL) {
      DispatchVerdict v;
      v.abstained = true;
      v.abstainReason = fmt::format("returned {}", dispatchStatusText(out.status));
      return v;
    }
    if (out.status != MOE_ROUTE_OK) {
      return violation(ViolationKind::kBadStatus,
                       fmt::format("returned {} on a call inside the domain ({})",
                                   dispatchStatusText(out.status), dispatchShapeText(c)),
                       fmt::format("status-{}", out.status));
    }
    return std::nullopt;
  }
  if (auto f = judgeRefusal(due, out.status, dispatchShapeText(c))) {
    return violation(f->kind, std::move(f->certificate), std::move(f->tag));
  }
  auto written = [](const std::vector<int32_t>& v) {
    return std::find_if(v.begin(), v.end(), [](int32_t x) { return x != kDispatchUnwritten; }) -
           v.begin();
  };
  const auto wSorted = static_cast<size_t>(written(out.sortedSlots));
  const auto wBlocks = static_cast<size_t>(written(out.blockExpert));
  std::string what;
  if (out.rows != kDispatchUnwritten && !c.nullRows) what = fmt::format("rows = {}", out.rows);
  if (wSorted < out.sortedSlots.size()) {
    what = fmt::format("sorted_slots[{}] = {}", wSorted, out.sortedSlots[wSorted]);
  }
  if (wBlocks < out.blockExpert.size()) {
    what = fmt::format("block_expert[{}] = {}", wBlocks, out.blockExpert[wBlocks]);
  }
  if (!what.empty()) {
    return violation(ViolationKind::kBadParamsWritten,
                     fmt::format("returned {} ({}) but wrote {}; layer_abi.h: nothing written "
                                 "on any error",
                                 dispatchStatusText(out.status), dueReasons(due), what));
  }
  DispatchVerdict pass;
  return pass;
}

// The spec's answer on a case inside the domain.
struct Expected {
  oracle::DispatchLayout layout;
  std::vector<uint8_t> kept;                  // per slot: dispatch keeps it
  std::vector<int64_t> count;                 // per expert: kept slots
  std::vector<std::vector<int64_t>> dropped;  // per expert: slots capacityKeeps drops
};

Expected expectedOf(const DispatchCase& c) {
  std::vector<int64_t> ids(c.ids.begin(), c.ids.end());
  const std::optional<std::size_t> C =
      c.capacity < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<size_t>(c.capacity));
  Expected e;
  e.layout =
      oracle::dispatchSpec(static_cast<size_t>(c.experts), static_cast<size_t>(c.block), C, ids);
  e.kept.assign(c.ids.size(), 0);
  e.count.assign(static_cast<size_t>(c.experts), 0);
  e.dropped.resize(static_cast<size_t>(c.experts));
  for (const oracle::DispatchSlot& d : oracle::dispatchKept(C, ids)) {
    e.kept[d.slot] = 1;
    ++e.count[d.expert];
  }
  for (size_t s = 0; s < c.ids.size(); ++s) {
    if (c.ids[s] >= 0 && !e.kept[s]) e.dropped[static_cast<size_t>(c.ids[s])].push_back(int64_t(s));
  }
  return e;
}

std::string firstSlotsText(const std::vector<int64_t>& slots) {
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(slots.size(), 8); ++i) {
    out += (i ? ", " : "") + std::to_string(slots[i]);
  }
  return slots.size() > 8 ? out + ", ..." : out;
}

// The slots of expert e that capacityKeeps keeps, the first `capacity` in slot order.
std::string keptSlotsText(const DispatchCase& c, const Expected& e, int64_t expert) {
  std::vector<int64_t> kept;
  for (size_t s = 0; s < c.ids.size() && kept.size() < 8; ++s) {
    if (c.ids[s] == expert && e.kept[s]) kept.push_back(int64_t(s));
  }
  return firstSlotsText(kept);
}

// The list's length: rows within 0..max_rows, no slot listed and no block's expert named
// past it.
std::optional<DispatchVerdict> checkRows(const DispatchCase& c, const DispatchOutput& out,
                                         int64_t S, int64_t specRows) {
  const int64_t B = c.block;
  const int64_t R = out.rows;
  if (R == kDispatchUnwritten) {
    return violation(
        ViolationKind::kRowsCount,
        fmt::format("returned 0 but left rows unwritten (the spec's rows: {})", specRows));
  }
  if (R < 0 || R > c.maxRows) {
    return violation(ViolationKind::kRowsCount,
                     fmt::format("rows = {}, outside 0..max_rows = {} (the spec's rows: {})", R,
                                 c.maxRows, specRows));
  }
  // Nothing listed past rows: a slot there is a slot rows leaves out.
  for (int64_t p = R; p < static_cast<int64_t>(out.sortedSlots.size()); ++p) {
    const int32_t v = out.sortedSlots[p];
    if (v >= 0 && v < S) {
      return violation(ViolationKind::kRowsCount,
                       fmt::format("rows = {} (the spec's: {}), but position {} past it holds {}",
                                   R, specRows, p, slotText(c, v)));
    }
  }
  const int64_t blocks = (R + B - 1) / B;
  for (int64_t b = blocks; b < static_cast<int64_t>(out.blockExpert.size()); ++b) {
    const int32_t v = out.blockExpert[b];
    if (v >= 0 && v < c.experts) {
      return violation(ViolationKind::kRowsCount,
                       fmt::format("rows = {} makes {} blocks (block {}), but block_expert[{}] = "
                                   "{} names an expert past them",
                                   R, blocks, B, b, v));
    }
  }
  return std::nullopt;
}

// Each position holds a slot or the padding value, and each slot at most once: seenAt[s]
// is slot s's position, or -1.
std::optional<DispatchVerdict> checkPositions(const DispatchCase& c, const DispatchOutput& out,
                                              int64_t pad, std::vector<int64_t>& seenAt) {
  const int64_t S = static_cast<int64_t>(c.ids.size());
  const int64_t R = out.rows;
  seenAt.assign(static_cast<size_t>(S), -1);
  for (int64_t p = 0; p < R; ++p) {
    const int32_t v = out.sortedSlots[p];
    if (v == pad) continue;
    if (v < 0 || v > pad) {
      return violation(ViolationKind::kBadPadding,
                       fmt::format("position {} holds {}: neither a slot (0..{}) nor the padding "
                                   "value tokens * k = {}",
                                   p, valueText(v), S - 1, pad));
    }
    if (seenAt[v] >= 0) {
      return violation(ViolationKind::kDuplicatedSlot,
                       fmt::format("{} (expert {}) is listed twice: at positions {} and {}",
                                   slotText(c, v), c.ids[v], seenAt[v], p));
    }
    seenAt[v] = p;
  }
  return std::nullopt;
}

// Each listed slot is one the spec keeps; each kept slot is listed; the list is the spec's
// padded length.
std::optional<DispatchVerdict> checkListedSet(const DispatchCase& c, const DispatchOutput& out,
                                              const Expected& e, int64_t specRows,
                                              const std::vector<int64_t>& seenAt) {
  const int64_t S = static_cast<int64_t>(c.ids.size());
  const int64_t B = c.block;
  const int64_t R = out.rows;
  for (int64_t s = 0; s < S; ++s) {
    if (seenAt[s] < 0 || e.kept[s]) continue;
    const int32_t id = c.ids[s];
    if (id < 0) {
      return violation(ViolationKind::kWrongExpert,
                       fmt::format("{} is empty (id -1) but listed at position {}; an empty "
                                   "slot belongs to no expert",
                                   slotText(c, s), seenAt[s]));
    }
    return violation(
        ViolationKind::kCapacityOrder,
        fmt::format("{} of expert {} is listed at position {}, but with capacity {} "
                    "capacityKeeps keeps expert {}'s first {} slots in slot order ({}) and "
                    "drops this one",
                    slotText(c, s), id, seenAt[s], c.capacity, id, c.capacity,
                    keptSlotsText(c, e, id)));
  }
  for (int64_t s = 0; s < S; ++s) {
    if (!e.kept[s] || seenAt[s] >= 0) continue;
    return violation(
        ViolationKind::kDroppedSlot,
        fmt::format("{} of expert {} is kept by the spec{} but not listed (rows = "
                    "{}, the spec's: {})",
                    slotText(c, s), c.ids[s],
                    c.capacity >= 0 ? fmt::format(" (capacity {})", c.capacity) : "", R, specRows));
  }
  if (R != specRows) {
    if (R % B != 0) {
      return violation(ViolationKind::kBadPadding,
                       fmt::format("rows = {} is not a multiple of block = {}: a list is not "
                                   "padded (the spec's rows: {})",
                                   R, B, specRows));
    }
    return violation(ViolationKind::kRowsCount,
                     fmt::format("rows = {} for the right slots; the spec's padded length is {} "
                                 "(each expert's kept slots rounded up to block = {})",
                                 R, specRows, B));
  }
  return std::nullopt;
}

// The blocks: experts in increasing order, each slot in a block of its expert, each
// expert's blocks as many as its slots need. blocksOf[x] counts expert x's blocks.
std::optional<DispatchVerdict> checkBlocks(const DispatchCase& c, const DispatchOutput& out,
                                           const Expected& e, int64_t pad,
                                           std::vector<int64_t>& blocksOf) {
  const int64_t B = c.block;
  const int64_t blocks = (out.rows + B - 1) / B;
  blocksOf.assign(static_cast<size_t>(c.experts), 0);
  for (int64_t b = 0; b < blocks; ++b) {
    const int32_t be = out.blockExpert[b];
    if (be < 0 || be >= c.experts) {
      return violation(ViolationKind::kWrongExpert,
                       fmt::format("block_expert[{}] = {}: not an expert (0..{})", b, valueText(be),
                                   c.experts - 1));
    }
    if (b > 0 && be < out.blockExpert[b - 1]) {
      return violation(ViolationKind::kWrongExpert,
                       fmt::format("experts out of order: block {} is expert {}, after block {} "
                                   "of expert {}; experts come in increasing order",
                                   b, be, b - 1, out.blockExpert[b - 1]));
    }
    ++blocksOf[be];
    for (int64_t p = b * B; p < (b + 1) * B; ++p) {
      const int32_t v = out.sortedSlots[p];
      if (v != pad && c.ids[v] != be) {
        return violation(ViolationKind::kWrongExpert,
                         fmt::format("{} of expert {} is at position {}, in block {} of expert {}",
                                     slotText(c, v), c.ids[v], p, b, be));
      }
    }
  }
  for (int64_t x = 0; x < c.experts; ++x) {
    const int64_t want = (e.count[x] + B - 1) / B;
    if (blocksOf[x] != want) {
      return violation(ViolationKind::kBadPadding,
                       fmt::format("expert {} takes {} blocks for its {} kept slots; at block {} "
                                   "it needs {}",
                                   x, blocksOf[x], e.count[x], B, want));
    }
  }
  return std::nullopt;
}

// Each expert's list: its slots first (in slot order where the contract says so), then
// its padding.
std::optional<DispatchVerdict> checkExpertLists(const DispatchCase& c, const DispatchOutput& out,
                                                const Expected& e, int64_t pad,
                                                WithinExpertOrder order,
                                                const std::vector<int64_t>& blocksOf) {
  const int64_t B = c.block;
  int64_t start = 0;
  for (int64_t x = 0; x < c.experts; ++x) {
    const int64_t len = blocksOf[x] * B;
    int64_t last = -1;
    for (int64_t p = start; p < start + len; ++p) {
      const int32_t v = out.sortedSlots[p];
      const bool padPlace = p - start >= e.count[x];
      if ((v == pad) != padPlace) {
        return violation(
            ViolationKind::kBadPadding,
            fmt::format("expert {}'s list (positions {}..{}) holds {} at position "
                        "{}, a {} place: its {} slots come first, then padding",
                        x, start, start + len - 1, v == pad ? "padding" : slotText(c, v), p,
                        padPlace ? "padding" : "slot", e.count[x]));
      }
      if (v != pad && order == WithinExpertOrder::kSlot && v < last) {
        return violation(ViolationKind::kSlotOrder,
                         fmt::format("expert {} lists slot {} before slot {} (positions {} and "
                                     "{}); the contract's within_expert_order is \"slot\"",
                                     x, last, v, p - 1, p));
      }
      if (v != pad) last = v;
    }
    start += len;
  }
  return std::nullopt;
}

// The content on success, each check naming what broke; the order makes the first broken
// rule the kind (a missing slot is dropped-slot before the rows it leaves short are).
DispatchVerdict judgeContent(const DispatchCase& c, const DispatchOutput& out,
                             WithinExpertOrder order) {
  const int64_t S = static_cast<int64_t>(c.ids.size());
  const int64_t pad = S;
  const Expected e = expectedOf(c);
  const int64_t specRows = static_cast<int64_t>(e.layout.rows());
  std::vector<int64_t> seenAt, blocksOf;
  std::optional<DispatchVerdict> v = checkRows(c, out, S, specRows);
  if (!v) v = checkPositions(c, out, pad, seenAt);
  if (!v) v = checkListedSet(c, out, e, specRows, seenAt);
  if (!v) v = checkBlocks(c, out, e, pad, blocksOf);
  if (!v) v = checkExpertLists(c, out, e, pad, order, blocksOf);
  return v ? *v : DispatchVerdict{};
}

}  // namespace

std::string dueReasons(const std::vector<DueStatus>& due) {
  std::string why;
  for (const DueStatus& d : due) why += (why.empty() ? "" : "; ") + d.why;
  return why;
}

std::string dueNames(const std::vector<DueStatus>& due) {
  std::string names;
  for (const DueStatus& d : due) {
    const std::string name = dispatchStatusText(d.status);
    if (names.find(name) == std::string::npos) names += (names.empty() ? "" : " or ") + name;
  }
  return names;
}

std::optional<StatusFinding> judgeRefusal(const std::vector<DueStatus>& due, int status,
                                          const std::string& shape) {
  const std::string allowed = dueNames(due);
  const std::string why = dueReasons(due);
  if (status == MOE_ROUTE_OK) {
    return StatusFinding{ViolationKind::kBadParamsAccepted,
                         fmt::format("returned 0 for a call outside the domain ({}): {}; "
                                     "layer_abi.h asks for {} with nothing written",
                                     shape, why, allowed),
                         ""};
  }
  const bool right =
      std::any_of(due.begin(), due.end(), [&](const DueStatus& d) { return d.status == status; });
  if (right) return std::nullopt;
  return StatusFinding{ViolationKind::kBadParamsWrongStatus,
                       fmt::format("returned {} for a call outside the domain ({}): {}; "
                                   "layer_abi.h asks for {}",
                                   dispatchStatusText(status), shape, why, allowed),
                       fmt::format("{}", status)};
}

std::string dispatchStatusText(int status) {
  static const char* kNames[] = {"0",
                                 "MOE_ROUTE_EBADSIZE (1)",
                                 "MOE_ROUTE_ENULL (2)",
                                 "MOE_ROUTE_EOVERFLOW (3)",
                                 "MOE_ROUTE_EUNSUPPORTED (4)",
                                 "MOE_ROUTE_EINTERNAL (5)",
                                 "MOE_ROUTE_EBADPARAMS (6)"};
  return status >= 0 && status <= 6 ? kNames[status] : fmt::format("{}", status);
}

std::vector<DueStatus> dueStatuses(const DispatchCase& c) {
  std::vector<DueStatus> due;
  if (c.tokens < 0 || c.k < 0 || c.experts < 0) {
    due.push_back({MOE_ROUTE_EBADSIZE, fmt::format("a negative size (tokens {}, k {}, experts {})",
                                                   c.tokens, c.k, c.experts)});
  }
  const int64_t slots = c.slots();
  if (slots > INT32_MAX) {
    due.push_back({MOE_ROUTE_EOVERFLOW, fmt::format("tokens * k = {} exceeds INT32_MAX", slots)});
  }
  if (c.block < 1) due.push_back({MOE_ROUTE_EBADPARAMS, fmt::format("block = {} < 1", c.block)});
  const bool idsRead = due.empty() || (c.block < 1 && due.size() == 1);
  if (idsRead && !c.nullIds && slots >= 0 && static_cast<int64_t>(c.ids.size()) == slots) {
    for (size_t s = 0; s < c.ids.size(); ++s) {
      if (c.ids[s] < -1 || c.ids[s] >= c.experts) {
        due.push_back({MOE_ROUTE_EBADPARAMS, fmt::format("ids[{}] = {} is neither -1 nor in 0..{}",
                                                         s, c.ids[s], c.experts - 1)});
        break;
      }
    }
  }
  if (c.nullIds && slots > 0) due.push_back({MOE_ROUTE_ENULL, "ids is NULL and tokens * k > 0"});
  if (c.nullSortedSlots && c.maxRows > 0) due.push_back({MOE_ROUTE_ENULL, "sorted_slots is NULL"});
  if (c.nullBlockExpert && c.blockExpertEntries() > 0) {
    due.push_back({MOE_ROUTE_ENULL, "block_expert is NULL"});
  }
  if (c.nullRows) due.push_back({MOE_ROUTE_ENULL, "rows is NULL"});
  if (due.empty()) {
    const int64_t rows = dispatchRowsNeeded(c);
    if (rows > c.maxRows) {
      due.push_back({MOE_ROUTE_EOVERFLOW,
                     fmt::format("the padded length {} exceeds max_rows = {}", rows, c.maxRows)});
    }
  }
  return due;
}

DispatchVerdict judgeDispatch(const DispatchCase& c, const DispatchOutput& out,
                              WithinExpertOrder order) {
  if (out.stopped) {
    DispatchVerdict v;
    v.abstained = true;
    v.abstainReason = "interrupted";
    return v;
  }
  if (out.fault) {
    return violation(out.fault->kind,
                     fmt::format("{} ({})", out.fault->detail, dispatchShapeText(c)),
                     out.fault->tag);
  }
  if (auto v = judgeStatus(c, out)) return *v;
  return judgeContent(c, out, order);
}

}  // namespace moe::fuzz
