// Every dispatch kernel behind one interface, as routers are (router.hpp): a user's shared
// library exporting moe_dispatch_v1 (layer_abi.h), run through a door (door.hpp: in a child
// process by default), or a function (the Python door, tests). A call gets output buffers
// filled with a sentinel, so that what the kernel did not write is seen.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/dispatch_case.hpp"
#include "moe/fuzz/dispatch_contract.hpp"
#include "moe/fuzz/door.hpp"

namespace moe::fuzz {

// What an output entry holds when the kernel did not write it.
inline constexpr int32_t kDispatchUnwritten = INT32_MIN + 0x5a5a;

// What one call produced. On a fault (or a stopped call) the outputs hold what came back,
// the sentinels at least.
struct DispatchOutput {
  int status = 0;
  std::optional<DoorFault> fault;
  bool stopped = false;
  std::vector<int32_t> sortedSlots;  // sortedEntries() entries
  std::vector<int32_t> blockExpert;  // blockExpertEntries() entries
  int32_t rows = kDispatchUnwritten;
  double seconds = 0;
};

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  const std::string& name() const { return name_; }
  const DispatchContract& contract() const { return contract_; }
  DispatchOutput run(const DispatchCase& c) const;
  // The watchdog of the next calls in seconds (0: a default from the case's size).
  void setCallTimeout(double seconds) const { timeout_ = seconds; }

 protected:
  Dispatcher(std::string name, DispatchContract contract)
      : name_(std::move(name)), contract_(std::move(contract)) {}
  // Calls the kernel: the buffers are ids, sorted_slots, block_expert, rows.
  virtual DoorCall call(const DispatchCase& c, std::span<DoorBuffer> buffers,
                        double timeout) const = 0;

 private:
  std::string name_;
  DispatchContract contract_;
  mutable double timeout_ = 0;
};

// The watchdog of a call without --call-timeout: 60 s plus 20 ns per (slot, expert) plus
// 50 ns per slot and row. A hang is a call that stops making progress, not a slow one: a
// correct but naive kernel (one pass over the slots per expert, O(T k E)) takes seconds at
// E = 3,324, T k = 261,763 on a loaded host, and a fixed 10 s called it a hang.
double dispatchWatchdogSeconds(const DispatchCase& c);

inline constexpr std::string_view kDispatchSymbol = "moe_dispatch_v1";

// True when the library exports moe_dispatch_v1 (the command picks the dispatch door by it).
bool exportsDispatch(const std::string& path);

// The library's moe_dispatch_v1 through a door; its contract read with the schema. Throws
// DoorLoadError (a library that cannot be loaded, lacks the symbol or has a bad contract).
std::unique_ptr<Dispatcher> openDispatcher(const std::string& path, const DoorOptions& options);

// A function as a dispatch kernel: it gets the case and the three output buffers (sized as
// the ABI's; NULL where the case says) and returns a status.
using DispatchFn = std::function<int(const DispatchCase& c, int32_t* sortedSlots,
                                     int32_t* blockExpert, int32_t* rows)>;
std::unique_ptr<Dispatcher> makeFunctionDispatcher(std::string name, DispatchContract contract,
                                                   DispatchFn fn);

}  // namespace moe::fuzz
