// The dispatch verdict (docs/fuzz.md "The dispatch door"): exact. The statuses a case calls
// for, then, on success, the kernel's list against the spec's (oracle/dispatch.hpp:
// dispatchSpec over capacityKeeps): every kept slot exactly once, under its expert, experts
// in increasing order, padding (the value tokens * k) only in padding places, rows and
// block_expert consistent, and within an expert slot order unless the contract says "any".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moe/fuzz/dispatch_case.hpp"
#include "moe/fuzz/dispatcher.hpp"
#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

struct DispatchVerdict {
  bool abstained = false;  // EUNSUPPORTED / EINTERNAL on a valid call, or a stopped call
  std::string abstainReason;
  ViolationKind kind = ViolationKind::kNone;  // kNone: passed (or abstained)
  std::string tag;                            // a fault's or a wrong status's
  std::string certificate;                    // what broke, with the slots and positions
  bool violation() const { return kind != ViolationKind::kNone; }
};

// The statuses the ABI allows for this case, with why; empty: it must succeed. Where
// several errors apply, any of their statuses is right (the ABI orders none).
struct DueStatus {
  int status = 0;
  std::string why;
};
std::vector<DueStatus> dueStatuses(const DispatchCase& c);

DispatchVerdict judgeDispatch(const DispatchCase& c, const DispatchOutput& out,
                              WithinExpertOrder order);

// "MOE_ROUTE_EBADPARAMS (6)", ... for messages.
std::string dispatchStatusText(int status);

// What a status says of a call that layer_abi.h wants refused (`due` not empty), for the
// dispatch and layer doors alike: a finding when the call was accepted or answered with a
// status none of the due errors allows, else nothing (whether something was written is the
// caller's to check). `shape` names the call in the certificate.
struct StatusFinding {
  ViolationKind kind = ViolationKind::kNone;
  std::string certificate, tag;
};
std::optional<StatusFinding> judgeRefusal(const std::vector<DueStatus>& due, int status,
                                          const std::string& shape);
// The due errors' reasons, "; "-separated.
std::string dueReasons(const std::vector<DueStatus>& due);
// The due statuses by name, each once, " or "-separated.
std::string dueNames(const std::vector<DueStatus>& due);

}  // namespace moe::fuzz
