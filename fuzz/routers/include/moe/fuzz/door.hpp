// A door: one C entry point of a user's shared library (moe_dispatch_v1, moe_layer_v1, ...)
// called with a few integer arguments and a few buffers, in this process or, by default,
// in a child process with every buffer ending at a guard page and starting after canary
// bytes, under a watchdog (docs/fuzz.md "Isolation: hostile kernels"). A crash, a hang, a
// read or write past a buffer, a write before one or into an input is a fault of the call,
// told as a finding; the run goes on with a new child. What the entry point means is the
// caller's: it gives the symbol names and a function that calls the symbol.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// A fault of the call itself: kCrash, kHang or kOutOfBoundsWrite, with what happened and
// the tag that tells two faults of one kind apart in a signature ("SIGSEGV", "sorted_slots").
struct DoorFault {
  ViolationKind kind = ViolationKind::kNone;
  std::string detail, tag;
};

// One buffer of a call. An input is copied in; an output is copied in (the sentinels the
// caller filled it with) and back. `null`: the entry point gets NULL here (the statuses'
// domain), and nothing is copied.
struct DoorBuffer {
  const char* name = "";  // as the ABI names the argument: "ids", "sorted_slots", ...
  void* data = nullptr;
  std::size_t bytes = 0;
  bool output = false;
  bool null = false;
};

inline constexpr std::size_t kDoorMaxScalars = 16;
inline constexpr std::size_t kDoorMaxBuffers = 8;

// Calls `symbol` (the entry point, dlsym's answer) with the call's integers and buffers
// (NULL where asked) and returns its status. Runs in the child: it must only call.
using DoorInvoke = int (*)(void* symbol, const int64_t* scalars, void* const* buffers);

struct DoorSpec {
  std::string symbol;          // "moe_dispatch_v1"
  std::string contractSymbol;  // "moe_dispatch_v1_contract" (optional in the library)
  DoorInvoke invoke = nullptr;
};

struct DoorOptions {
  bool inProcess = false;  // --in-process: no child, no guards, no watchdog
  double callTimeout = 0;  // --call-timeout; 0: the caller's per-call limit
  const volatile std::sig_atomic_t* stop = nullptr;  // a signal ends the call (not a finding)
};

struct DoorCall {
  int status = 0;
  std::optional<DoorFault> fault;
  bool stopped = false;  // the run is ending: the call was abandoned, nothing to judge
  double seconds = 0;
};

// Thrown when the library cannot be loaded or lacks the entry point (the CLI exits 2).
class DoorLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Door {
 public:
  virtual ~Door() = default;
  // The contract text the library returned, or nullopt when it exports no contract.
  const std::optional<std::string>& contractText() const { return contract_; }
  // One call; `timeout` seconds is the watchdog (the caller's estimate of a hang), unless
  // DoorOptions::callTimeout is set.
  virtual DoorCall call(std::span<const int64_t> scalars, std::span<DoorBuffer> buffers,
                        double timeout) = 0;

 protected:
  std::optional<std::string> contract_;
};

// True when the library at `path` exports `symbol` (dlopen in this process, RTLD_LAZY; the
// library's constructors run). Throws DoorLoadError when it cannot be loaded.
bool libraryExports(const std::string& path, const std::string& symbol);

// Loads the library (in a child unless options.inProcess) and finds the entry point. Throws
// DoorLoadError with the reason.
std::unique_ptr<Door> openDoor(const std::string& path, const DoorSpec& spec,
                               const DoorOptions& options);

}  // namespace moe::fuzz
