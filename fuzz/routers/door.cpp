#include "moe/fuzz/door.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace moe::fuzz {

namespace {

using AbiContract = const char* (*)();
using Clock = std::chrono::steady_clock;

constexpr size_t kCanaryBytes = 64;
// The child's exit status when an exception escaped the entry point ("exited with status 86").
constexpr int kEscapedException = 86;
constexpr uint8_t kCanary = 0xa5;

size_t pageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t alignUp(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

// ---- The shared region: each buffer after canary bytes and ending at a guard page. ----------

struct Layout {
  std::array<size_t, kDoorMaxBuffers> start{}, guard{};
  size_t end = 0;
};

Layout layoutFor(std::span<const uint64_t> bytes) {
  const size_t page = pageSize();
  Layout l;
  size_t at = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    l.guard[i] = alignUp(at + kCanaryBytes + bytes[i], page);
    l.start[i] = l.guard[i] - bytes[i];
    at = l.guard[i] + page;
  }
  l.end = at;
  return l;
}

struct Request {
  int32_t scalars = 0, buffers = 0;
  std::array<int64_t, kDoorMaxScalars> scalar{};
  std::array<uint64_t, kDoorMaxBuffers> bytes{};
  std::array<uint8_t, kDoorMaxBuffers> null{};
};

enum class Stray : int32_t { kNone = 0, kPast, kBefore };

struct Reply {
  int32_t status = 0;
  Stray stray = Stray::kNone;
  int32_t buffer = 0;
  int32_t write = 1;  // the guard page was written (1) or read (0)
};

enum class HelloCode : int32_t { kError = 0, kContract = 1, kNoContract = 2 };

bool writeAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// ---- The child. ------------------------------------------------------------------------------

volatile uintptr_t gGuards[kDoorMaxBuffers] = {};
volatile int gGuardCount = 0;
volatile int gReplyFd = -1;

// A fault in a guard page is the kernel reading or writing past a buffer: say which on the
// pipe and leave. Any other fault: the default action, which the parent sees as a crash.
extern "C" void onDoorFault(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const uintptr_t page = pageSize();
  for (int i = 0; i < gGuardCount; ++i) {
    if (gGuards[i] != 0 && addr >= gGuards[i] && addr < gGuards[i] + page) {
      Reply r;
      r.stray = Stray::kPast;
      r.buffer = i;
#if defined(__x86_64__)
      r.write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
      (void)context;
#endif
      writeAll(gReplyFd, &r, sizeof r);
      _exit(0);
    }
  }
  signal(sig, SIG_DFL);  // returning re-runs the access, which now kills the child
  // A signal sent rather than a fault (raise, kill: si_code <= 0) re-runs nothing: send it
  // again, to be delivered, now fatal, when the handler returns.
  if (info->si_code <= 0) raise(sig);
}

bool canaryIntact(const uint8_t* before) {
  return std::all_of(before, before + kCanaryBytes, [](uint8_t b) { return b == kCanary; });
}

void installFaultHandler() {
  // Faults run on their own stack, so that a kernel that overflows its stack is a crash too.
  static uint8_t altStack[1 << 16];
  stack_t ss{};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof altStack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = onDoorFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

[[noreturn]] void serve(int requests, int replies, const std::string& path, const DoorSpec& spec,
                        uint8_t* region) {
  signal(SIGINT, SIG_IGN);  // Ctrl-C is for the parent, which ends the run cleanly
  signal(SIGTERM, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the judge
  gReplyFd = replies;
  auto hello = [&](HelloCode code, const std::string& text) {
    const auto n = static_cast<uint32_t>(text.size());
    writeAll(replies, &code, sizeof code);
    writeAll(replies, &n, sizeof n);
    writeAll(replies, text.data(), text.size());
  };
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    hello(HelloCode::kError, fmt::format("cannot load library: {}", dlerror()));
    _exit(0);
  }
  void* symbol = dlsym(handle, spec.symbol.c_str());
  if (!symbol) {
    hello(HelloCode::kError, fmt::format("{} does not export {}", path, spec.symbol));
    _exit(0);
  }
  if (auto contract = reinterpret_cast<AbiContract>(dlsym(handle, spec.contractSymbol.c_str()))) {
    const char* text = contract();
    hello(HelloCode::kContract, text ? text : "");
  } else {
    hello(HelloCode::kNoContract, "");
  }
  installFaultHandler();
  const size_t page = pageSize();
  Request q;
  while (readAll(requests, &q, sizeof q)) {
    const auto n = static_cast<size_t>(q.buffers);
    const Layout l = layoutFor(std::span<const uint64_t>(q.bytes.data(), n));
    std::array<void*, kDoorMaxBuffers> at{};
    for (size_t i = 0; i < n; ++i) {
      mprotect(region + l.guard[i], page, PROT_NONE);
      gGuards[i] = reinterpret_cast<uintptr_t>(region + l.guard[i]);
      at[i] = q.null[i] ? nullptr : region + l.start[i];
    }
    gGuardCount = static_cast<int>(n);
    Reply r;
    try {
      r.status = spec.invoke(symbol, q.scalar.data(), at.data());
    } catch (...) {
      // A C++ exception that escaped the entry point (a C ABI throws nothing): the call
      // failed as a crash does. Unwinding further would run the judge's own code in the child.
      _exit(kEscapedException);
    }
    gGuardCount = 0;
    for (size_t i = 0; i < n; ++i) {
      mprotect(region + l.guard[i], page, PROT_READ | PROT_WRITE);
      if (r.stray == Stray::kNone && !canaryIntact(region + l.start[i] - kCanaryBytes)) {
        r.stray = Stray::kBefore;
        r.buffer = static_cast<int32_t>(i);
      }
    }
    if (!writeAll(replies, &r, sizeof r)) break;
  }
  _exit(0);
}

// ---- The parent's side. ----------------------------------------------------------------------

std::string signalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// Room for the first cases without a restart (MAP_NORESERVE: pages cost memory only once
// touched); a larger call maps a larger region and starts a new child.
constexpr size_t kInitialRegion = size_t{1} << 28;
constexpr double kLoadSeconds = 60;

class IsolatedDoor final : public Door {
 public:
  IsolatedDoor(std::string path, DoorSpec spec, DoorOptions options)
      : path_(std::move(path)), spec_(std::move(spec)), options_(options) {}
  ~IsolatedDoor() override {
    reap();
    if (region_) munmap(region_, size_);
  }
  IsolatedDoor(const IsolatedDoor&) = delete;
  IsolatedDoor& operator=(const IsolatedDoor&) = delete;

  // Starts the child; the library's contract (or its absence) comes back, or the error.
  void start() {
    reserve(kInitialRegion);
    const std::string error = spawn();
    if (!error.empty()) throw DoorLoadError(error);
  }

  DoorCall call(std::span<const int64_t> scalars, std::span<DoorBuffer> buffers,
                double timeout) override {
    DoorCall out;
    Request q;
    q.scalars = static_cast<int32_t>(std::min(scalars.size(), kDoorMaxScalars));
    std::copy_n(scalars.begin(), q.scalars, q.scalar.begin());
    q.buffers = static_cast<int32_t>(std::min(buffers.size(), kDoorMaxBuffers));
    for (int32_t i = 0; i < q.buffers; ++i) {
      q.bytes[i] = buffers[i].null ? 0 : buffers[i].bytes;
      q.null[i] = buffers[i].null ? 1 : 0;
    }
    const Layout l = layoutFor(std::span<const uint64_t>(q.bytes.data(), q.buffers));
    reserve(l.end);
    if (pid_ <= 0) {
      const std::string error = spawn();
      if (!error.empty()) {
        out.fault = DoorFault{ViolationKind::kCrash, "the library could not be restarted: " + error,
                              "restart"};
        return out;
      }
    }
    for (int32_t i = 0; i < q.buffers; ++i) {
      std::memset(region_ + l.start[i] - kCanaryBytes, kCanary, kCanaryBytes);
      if (q.bytes[i] > 0) std::memcpy(region_ + l.start[i], buffers[i].data, q.bytes[i]);
    }
    const auto begin = Clock::now();
    if (!writeAll(requests_, &q, sizeof q)) return crashed(out);
    const double limit = options_.callTimeout > 0 ? options_.callTimeout : timeout;
    switch (waitReadable(limit)) {
      case Wait::kTimeout:
        reap();
        out.fault = DoorFault{
            ViolationKind::kHang,
            fmt::format("the call did not return within {:.3g} s ({}); the child was killed", limit,
                        options_.callTimeout > 0 ? "--call-timeout" : "the watchdog"),
            "hang"};
        return out;
      case Wait::kStopped:
        reap();
        out.stopped = true;
        return out;
      case Wait::kReady:
        break;
    }
    Reply r;
    if (!readAll(replies_, &r, sizeof r)) return crashed(out);
    out.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    if (r.stray != Stray::kNone) {
      const DoorBuffer& b = buffers[static_cast<size_t>(r.buffer)];
      if (r.stray == Stray::kPast) {
        reap();
        out.fault = DoorFault{
            ViolationKind::kOutOfBoundsWrite,
            fmt::format("it {} past the end of {} ({} bytes): the guard page after it was hit",
                        r.write ? "wrote" : "read", b.name, b.bytes),
            b.name};
      } else {
        out.fault = DoorFault{
            ViolationKind::kOutOfBoundsWrite,
            fmt::format("it wrote before the start of {}: the canary bytes there changed", b.name),
            std::string("before-") + b.name};
      }
      return out;
    }
    for (int32_t i = 0; i < q.buffers; ++i) {
      if (q.bytes[i] == 0) continue;
      DoorBuffer& b = buffers[i];
      if (b.output) {
        std::memcpy(b.data, region_ + l.start[i], q.bytes[i]);
      } else if (std::memcmp(b.data, region_ + l.start[i], q.bytes[i]) != 0) {
        out.fault = DoorFault{ViolationKind::kOutOfBoundsWrite,
                              fmt::format("it wrote into its input {} (a const buffer)", b.name),
                              std::string("into-") + b.name};
        return out;
      }
    }
    out.status = r.status;
    return out;
  }

 private:
  enum class Wait { kReady, kTimeout, kStopped };

  void reserve(size_t bytes) {
    if (region_ && bytes <= size_) return;
    reap();
    if (region_) munmap(region_, size_);
    size_ = std::max(alignUp(bytes, pageSize()), size_ * 2);
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      region_ = nullptr;
      size_ = 0;
      throw std::runtime_error(fmt::format("isolated door: cannot map {} bytes", bytes));
    }
    region_ = static_cast<uint8_t*>(p);
  }

  // Forks the child and reads its hello: "" on success, else why it failed.
  std::string spawn() {
    int req[2], rep[2];
    if (pipe2(req, O_CLOEXEC) != 0) return fmt::format("cannot make pipes: {}", strerror(errno));
    if (pipe2(rep, O_CLOEXEC) != 0) {
      close(req[0]);
      close(req[1]);
      return fmt::format("cannot make pipes: {}", strerror(errno));
    }
    const pid_t pid = fork();
    if (pid < 0) return fmt::format("cannot fork: {}", strerror(errno));
    if (pid == 0) {
      close(req[1]);
      close(rep[0]);
      serve(req[0], rep[1], path_, spec_, region_);
    }
    close(req[0]);
    close(rep[1]);
    pid_ = pid;
    requests_ = req[1];
    replies_ = rep[0];
    HelloCode code = HelloCode::kError;
    uint32_t n = 0;
    if (waitReadable(kLoadSeconds) != Wait::kReady || !readAll(replies_, &code, sizeof code) ||
        !readAll(replies_, &n, sizeof n)) {
      return fmt::format("the library did not load in the child: {}", reap().first);
    }
    std::string text(n, '\0');
    if (n > 0 && !readAll(replies_, text.data(), n)) {
      return fmt::format("the library died while loading: {}", reap().first);
    }
    if (code == HelloCode::kError) {
      reap();
      return text;
    }
    if (code == HelloCode::kContract) {
      contract_ = text;
    } else {
      contract_.reset();
    }
    return "";
  }

  Wait waitReadable(double seconds) const {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(seconds));
    for (;;) {
      if (options_.stop && *options_.stop) return Wait::kStopped;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Wait::kTimeout;
      pollfd p{replies_, POLLIN, 0};
      const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (rc > 0) return Wait::kReady;
      if (rc < 0 && errno != EINTR) return Wait::kReady;  // the read will say what happened
    }
  }

  // Ends the child: (what happened, the tag for a signature).
  std::pair<std::string, std::string> reap() {
    if (pid_ <= 0) return {"not running", "gone"};
    close(requests_);
    close(replies_);
    requests_ = replies_ = -1;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      return {fmt::format("killed by {} (signal {})", signalText(sig), sig), signalText(sig)};
    }
    if (WEXITSTATUS(status) == kEscapedException) {
      return {"a C++ exception escaped the entry point", "escaped-exception"};
    }
    return {fmt::format("exited with status {}", WEXITSTATUS(status)),
            fmt::format("exit-{}", WEXITSTATUS(status))};
  }

  DoorCall& crashed(DoorCall& out) {
    const auto [detail, tag] = reap();
    out.fault = DoorFault{ViolationKind::kCrash,
                          "the library under test died during the call: " + detail, tag};
    return out;
  }

  std::string path_;
  DoorSpec spec_;
  DoorOptions options_;
  uint8_t* region_ = nullptr;
  size_t size_ = 0;
  pid_t pid_ = -1;
  int requests_ = -1, replies_ = -1;
};

class InProcessDoor final : public Door {
 public:
  InProcessDoor(void* symbol, DoorInvoke invoke, std::optional<std::string> contract)
      : symbol_(symbol), invoke_(invoke) {
    contract_ = std::move(contract);
  }
  DoorCall call(std::span<const int64_t> scalars, std::span<DoorBuffer> buffers, double) override {
    std::array<int64_t, kDoorMaxScalars> s{};
    std::copy_n(scalars.begin(), std::min(scalars.size(), kDoorMaxScalars), s.begin());
    std::array<void*, kDoorMaxBuffers> at{};
    for (size_t i = 0; i < std::min(buffers.size(), kDoorMaxBuffers); ++i) {
      at[i] = buffers[i].null ? nullptr : buffers[i].data;
    }
    DoorCall out;
    const auto begin = Clock::now();
    out.status = invoke_(symbol_, s.data(), at.data());
    out.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return out;
  }

 private:
  void* symbol_;
  DoorInvoke invoke_;
};

}  // namespace

// Asked in a child, so that a library whose constructors crash or hang cannot take the
// judge with it: the child's exit status is 1 (exported), 0 (not) or 2 (not loadable).
bool libraryExports(const std::string& path, const std::string& symbol) {
  const pid_t pid = fork();
  if (pid < 0) throw DoorLoadError(fmt::format("cannot fork: {}", strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(static_cast<unsigned>(kLoadSeconds));
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    _exit(!handle ? 2 : dlsym(handle, symbol.c_str()) ? 1 : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 2) {
    throw DoorLoadError(fmt::format("cannot load library {}", path));
  }
  return WEXITSTATUS(status) == 1;
}

std::unique_ptr<Door> openDoor(const std::string& path, const DoorSpec& spec,
                               const DoorOptions& options) {
  if (options.inProcess) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw DoorLoadError(fmt::format("cannot load library: {}", dlerror()));
    void* symbol = dlsym(handle, spec.symbol.c_str());
    if (!symbol) throw DoorLoadError(fmt::format("{} does not export {}", path, spec.symbol));
    std::optional<std::string> contract;
    if (auto fn = reinterpret_cast<AbiContract>(dlsym(handle, spec.contractSymbol.c_str()))) {
      const char* text = fn();
      contract = text ? text : "";
    }
    return std::make_unique<InProcessDoor>(symbol, spec.invoke, std::move(contract));
  }
  // A child that dies mid-request must not take the judge with it through SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  auto door = std::make_unique<IsolatedDoor>(path, spec, options);
  door->start();
  return door;
}

}  // namespace moe::fuzz
