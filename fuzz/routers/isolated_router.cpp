#include "moe/fuzz/isolated_router.hpp"

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
#include <cerrno>
#include <chrono>
#include <cstring>

#include "params_v2.hpp"

namespace moe::fuzz {

namespace {

using AbiRoute = int (*)(int32_t, int32_t, int32_t, const float*, int32_t*, float*);
using AbiContract = const char* (*)();

// ---- The shared region: logits, then ids and gates each ending at a guard page. ----------

constexpr size_t kCanaryBytes = 64;
constexpr uint8_t kCanary = 0xa5;

size_t pageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t alignUp(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

// Byte offsets inside the region for one call, computed the same way on both sides.
struct Layout {
  size_t ids = 0, idsGuard = 0, gates = 0, gatesGuard = 0, end = 0;
};

Layout layoutFor(size_t logits, size_t slots) {
  const size_t page = pageSize();
  Layout l;
  l.idsGuard = alignUp(alignUp(logits * 4, page) + kCanaryBytes + slots * 4, page);
  l.ids = l.idsGuard - slots * 4;
  l.gatesGuard = alignUp(l.idsGuard + page + kCanaryBytes + slots * 4, page);
  l.gates = l.gatesGuard - slots * 4;
  l.end = l.gatesGuard + page;
  return l;
}

// ---- Messages on the two pipes. ------------------------------------------------------------

// A v2 call carries the family's parameters; its bias (experts floats) follows the logits
// in the region.
struct Request {
  int32_t tokens = 0, experts = 0, k = 0;
  int32_t v2 = 0, score = 0, groups = 1, topkGroups = 1, groupScore = 0, renormalize = 1;
  int32_t structShort = 0, hasBias = 0;
  float scale = 1.0f;
};

enum class Stray : int32_t { kNone = 0, kPastIds, kPastGates, kBeforeIds, kBeforeGates };

struct Reply {
  int32_t status = 0;
  Stray stray = Stray::kNone;
  int32_t write = 1;  // the guard page was written (1) or read (0)
};

// The first message of a child: whether the library loaded, and its contract or the error.
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

// What the fault handler needs: where the guard pages of the call in flight are.
volatile uintptr_t gIdsGuard = 0, gGatesGuard = 0;
volatile int gReplyFd = -1;

// A fault in a guard page is the kernel writing (or reading) past its output: say so on the
// pipe and leave. Any other fault: the default action, which the parent sees as a crash.
extern "C" void onChildFault(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const uintptr_t page = pageSize();
  Reply r;
  if (gIdsGuard != 0 && addr >= gIdsGuard && addr < gIdsGuard + page) r.stray = Stray::kPastIds;
  if (gGatesGuard != 0 && addr >= gGatesGuard && addr < gGatesGuard + page) {
    r.stray = Stray::kPastGates;
  }
  if (r.stray != Stray::kNone) {
#if defined(__x86_64__)
    // The page-fault error code's bit 1 is set for a write.
    r.write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)context;
#endif
    writeAll(gReplyFd, &r, sizeof r);
    _exit(0);
  }
  signal(sig, SIG_DFL);  // returning re-runs the access, which now kills the child
}

bool canaryIntact(const uint8_t* before) {
  return std::all_of(before, before + kCanaryBytes, [](uint8_t b) { return b == kCanary; });
}

[[noreturn]] void serve(int requests, int replies, const std::string& path, const std::string& abi,
                        uint8_t* region) {
  signal(SIGINT, SIG_IGN);  // Ctrl-C is for the parent, which ends the run cleanly
  signal(SIGTERM, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the judge
  gReplyFd = replies;
  int32_t version = 1;
  auto hello = [&](HelloCode code, const std::string& text) {
    const auto n = static_cast<uint32_t>(text.size());
    writeAll(replies, &code, sizeof code);
    writeAll(replies, &version, sizeof version);
    writeAll(replies, &n, sizeof n);
    writeAll(replies, text.data(), text.size());
  };
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    hello(HelloCode::kError, fmt::format("cannot load router library: {}", dlerror()));
    _exit(0);
  }
  auto route = reinterpret_cast<AbiRoute>(dlsym(handle, "moe_route_v1"));
  auto routeV2 = reinterpret_cast<AbiRouteV2>(dlsym(handle, "moe_route_v2"));
  try {
    version = chooseAbi(abi, route != nullptr, routeV2 != nullptr, path) ? 2 : 1;
  } catch (const RouterLoadError& e) {
    hello(HelloCode::kError, e.what());
    _exit(0);
  }
  if (auto contract = reinterpret_cast<AbiContract>(
          dlsym(handle, version == 2 ? "moe_route_v2_contract" : "moe_route_v1_contract"))) {
    const char* text = contract();
    hello(HelloCode::kContract, text ? text : "");
  } else {
    hello(HelloCode::kNoContract, "");
  }
  // Faults run on their own stack, so that a kernel that overflows its stack is a crash too.
  static uint8_t altStack[1 << 16];
  stack_t ss{};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof altStack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = onChildFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  const size_t page = pageSize();
  // The guard pages stay in place between calls of one shape (the parent's mapping of the
  // region is its own, unprotected), so a campaign at one shape pays no mprotect per call.
  Layout guarded;
  bool haveGuards = false;
  Request q;
  while (readAll(requests, &q, sizeof q)) {
    const size_t logits = static_cast<size_t>(q.tokens) * static_cast<size_t>(q.experts);
    const size_t slots = static_cast<size_t>(q.tokens) * static_cast<size_t>(q.k);
    const size_t biasCount = q.hasBias ? static_cast<size_t>(q.experts) : 0;
    const Layout l = layoutFor(logits + biasCount, slots);
    if (!haveGuards || l.idsGuard != guarded.idsGuard || l.gatesGuard != guarded.gatesGuard) {
      if (haveGuards) {
        mprotect(region + guarded.idsGuard, page, PROT_READ | PROT_WRITE);
        mprotect(region + guarded.gatesGuard, page, PROT_READ | PROT_WRITE);
      }
      mprotect(region + l.idsGuard, page, PROT_NONE);
      mprotect(region + l.gatesGuard, page, PROT_NONE);
      guarded = l;
      haveGuards = true;
    }
    gIdsGuard = reinterpret_cast<uintptr_t>(region + l.idsGuard);
    gGatesGuard = reinterpret_cast<uintptr_t>(region + l.gatesGuard);
    Reply r;
    const float* logitsAt = logits ? reinterpret_cast<const float*>(region) : nullptr;
    int32_t* idsAt = slots ? reinterpret_cast<int32_t*>(region + l.ids) : nullptr;
    float* gatesAt = slots ? reinterpret_cast<float*>(region + l.gates) : nullptr;
    if (q.v2) {
      Family f;
      f.score = q.score;
      f.groups = q.groups;
      f.topkGroups = q.topkGroups;
      f.groupScore = q.groupScore;
      f.renormalize = q.renormalize;
      f.scale = q.scale;
      f.structShort = q.structShort;
      const float* bias = q.hasBias ? reinterpret_cast<const float*>(region + logits * 4) : nullptr;
      const moe_route_params_v2 p = paramsV2(f, q.tokens, q.experts, q.k, bias);
      r.status = version == 2 ? routeV2(&p, logitsAt, idsAt, gatesAt) : MOE_ROUTE_EUNSUPPORTED;
    } else {
      r.status = route ? route(q.tokens, q.experts, q.k, logitsAt, idsAt, gatesAt)
                       : MOE_ROUTE_EUNSUPPORTED;
    }
    gIdsGuard = 0;
    gGatesGuard = 0;
    if (!canaryIntact(region + l.ids - kCanaryBytes)) r.stray = Stray::kBeforeIds;
    if (!canaryIntact(region + l.gates - kCanaryBytes)) r.stray = Stray::kBeforeGates;
    if (!writeAll(replies, &r, sizeof r)) break;
  }
  _exit(0);
}

// ---- The parent's side: one child at a time, restarted after it dies. ----------------------

std::string signalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// Room for the largest case a campaign draws (2^24 logits; at most 2^24 + 2^17 slots when
// k <= E + 2), mapped once: growing the region means a new child, and a library such as
// libtorch takes a good part of a second to load. MAP_NORESERVE: pages cost memory only once
// touched.
const size_t kInitialRegion = layoutFor(size_t{1} << 24, (size_t{1} << 24) + (size_t{1} << 17)).end;

class Child {
 public:
  Child(std::string path, std::string abi) : path_(std::move(path)), abi_(std::move(abi)) {}
  int32_t version() const { return version_; }
  ~Child() {
    stop();
    if (region_) munmap(region_, size_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  struct Hello {
    HelloCode code = HelloCode::kError;
    std::string text;
  };

  bool running() const { return pid_ > 0; }
  uint8_t* region() const { return region_; }

  // The region must hold `bytes`; a larger one means a new mapping, so a new child.
  void reserve(size_t bytes) {
    if (region_ && bytes <= size_) return;
    stop();
    if (region_) munmap(region_, size_);
    size_ = std::max(alignUp(bytes, pageSize()), size_ * 2);
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      region_ = nullptr;
      size_ = 0;
      throw std::runtime_error(fmt::format("isolated router: cannot map {} bytes", bytes));
    }
    region_ = static_cast<uint8_t*>(p);
  }

  Hello start(double loadSeconds) {
    reserve(kInitialRegion);
    int req[2], rep[2];
    if (pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
      return {HelloCode::kError, fmt::format("cannot make pipes: {}", std::strerror(errno))};
    }
    const pid_t pid = fork();
    if (pid < 0) {
      return {HelloCode::kError, fmt::format("cannot fork: {}", std::strerror(errno))};
    }
    if (pid == 0) {
      close(req[1]);
      close(rep[0]);
      serve(req[0], rep[1], path_, abi_, region_);
    }
    close(req[0]);
    close(rep[1]);
    pid_ = pid;
    requests_ = req[1];
    replies_ = rep[0];
    Hello h;
    uint32_t n = 0;
    if (waitReadable(loadSeconds, nullptr) != Wait::kReady ||
        !readAll(replies_, &h.code, sizeof h.code) ||
        !readAll(replies_, &version_, sizeof version_) || !readAll(replies_, &n, sizeof n)) {
      return {HelloCode::kError,
              fmt::format("the library did not load in the child: {}", reap().detail)};
    }
    h.text.resize(n);
    if (n > 0 && !readAll(replies_, h.text.data(), n)) {
      return {HelloCode::kError, fmt::format("the library died while loading: {}", reap().detail)};
    }
    if (h.code == HelloCode::kError) reap();
    return h;
  }

  enum class Wait { kReady, kTimeout, kStopped };

  Wait waitReadable(double seconds, const volatile std::sig_atomic_t* stop) const {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(seconds));
    for (;;) {
      if (stop && *stop) return Wait::kStopped;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Wait::kTimeout;
      pollfd p{replies_, POLLIN, 0};
      // Wake up at least every 100 ms to see a stop request.
      const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (rc > 0) return Wait::kReady;
      if (rc < 0 && errno != EINTR) return Wait::kReady;  // the read will say what happened
    }
  }

  bool send(const Request& q) { return writeAll(requests_, &q, sizeof q); }
  bool receive(Reply& r) { return readAll(replies_, &r, sizeof r); }

  struct Ending {
    std::string detail;  // "killed by SIGSEGV (signal 11)", "exited with status 3"
    std::string tag;     // for a signature: "SIGSEGV", "exit-3"
  };

  // Ends the child and says how it ended. SIGKILL first: harmless to a child that has
  // already died, and the only sure end for one that closed its pipes and lives on.
  Ending reap() {
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
    return {fmt::format("exited with status {}", WEXITSTATUS(status)),
            fmt::format("exit-{}", WEXITSTATUS(status))};
  }

  void stop() {
    if (pid_ > 0) reap();
  }

 private:
  std::string path_;
  std::string abi_;
  int32_t version_ = 1;
  uint8_t* region_ = nullptr;
  size_t size_ = 0;
  pid_t pid_ = -1;
  int requests_ = -1, replies_ = -1;
};

// Loading libtorch and the like takes a while: the first hello gets a generous bound.
constexpr double kLoadSeconds = 60;

// The watchdog without a campaign's fitted cost (replay, explain, reproduce): 60 s plus
// 20 ns per (token, expert, kept slot). A hang is a call that stops making progress, and a
// correct but naive kernel (one pass over E per kept slot, O(T E k)) takes seconds on the
// largest cases: E = k = 4,096, T = 240 is 4e9 steps.
double defaultTimeout(size_t logits, size_t slots, int32_t k, int32_t experts) {
  const double perStep = 2e-8;
  const double keptPerToken = std::max(1, std::min(k, experts));
  return 60.0 + perStep * (static_cast<double>(logits) * keptPerToken + static_cast<double>(slots));
}

class IsolatedLibraryRouter final : public Router {
 public:
  IsolatedLibraryRouter(std::string name, Contract contract, std::unique_ptr<Child> child,
                        RouterOptions options)
      : Router(std::move(name), std::move(contract)), child_(std::move(child)), options_(options) {}

 protected:
  int call(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
           float* gates, int32_t threads) const override {
    RouteFault ignored;
    return callChecked(tokens, experts, k, logits, ids, gates, threads, ignored);
  }

  int callChecked(int32_t tokens, int32_t experts, int32_t k, const float* logits, int32_t* ids,
                  float* gates, int32_t, RouteFault& fault) const override {
    return run(nullptr, tokens, experts, k, logits, ids, gates, fault);
  }

  int callV2(const Family& f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
             int32_t* ids, float* gates, int32_t, RouteFault& fault) const override {
    return run(&f, tokens, experts, k, logits, ids, gates, fault);
  }

 public:
  void setCallTimeout(double seconds) const override { campaignTimeout_ = seconds; }

 private:
  int run(const Family* f, int32_t tokens, int32_t experts, int32_t k, const float* logits,
          int32_t* ids, float* gates, RouteFault& fault) const {
    const size_t L = static_cast<size_t>(tokens) * static_cast<size_t>(experts);
    const size_t S = static_cast<size_t>(tokens) * static_cast<size_t>(k);
    const size_t B = f && !f->bias.empty() ? f->bias.size() : 0;
    const Layout l = layoutFor(L + B, S);
    child_->reserve(l.end);
    if (!child_->running()) {
      Child::Hello h = child_->start(kLoadSeconds);
      if (h.code == HelloCode::kError) {
        fault = {ViolationKind::kCrash, "the library could not be restarted: " + h.text, "restart"};
        return 0;
      }
    }
    uint8_t* region = child_->region();
    if (L > 0) std::memcpy(region, logits, L * 4);
    if (B > 0) std::memcpy(region + L * 4, f->bias.data(), B * 4);
    if (S > 0) {
      std::memcpy(region + l.ids, ids, S * 4);
      std::memcpy(region + l.gates, gates, S * 4);
    }
    std::memset(region + l.ids - kCanaryBytes, kCanary, kCanaryBytes);
    std::memset(region + l.gates - kCanaryBytes, kCanary, kCanaryBytes);
    Request q{tokens, experts, k};
    if (f) {
      q.v2 = 1;
      q.score = f->score;
      q.groups = f->groups;
      q.topkGroups = f->topkGroups;
      q.groupScore = f->groupScore;
      q.renormalize = f->renormalize;
      q.structShort = f->structShort;
      q.hasBias = B > 0;
      q.scale = f->scale;
    }
    if (!child_->send(q)) return crashed(fault);
    const double limit = options_.callTimeout > 0 ? options_.callTimeout
                         : campaignTimeout_ > 0   ? campaignTimeout_
                                                  : defaultTimeout(L, S, k, experts);
    switch (child_->waitReadable(limit, options_.stop)) {
      case Child::Wait::kTimeout:
        child_->reap();
        fault = {ViolationKind::kHang,
                 fmt::format("the call did not return within {:.3g} s (the watchdog: {}); the "
                             "child was killed",
                             limit,
                             options_.callTimeout > 0
                                 ? "--call-timeout"
                                 : "ten times the call's budget from the router's own cost on "
                                   "this run, at least 60 s; --call-timeout sets it"),
                 "hang"};
        return 0;
      case Child::Wait::kStopped:
        child_->reap();
        return 5;  // MOE_ROUTE_EINTERNAL: an abstention; the run is ending anyway
      case Child::Wait::kReady:
        break;
    }
    Reply r;
    if (!child_->receive(r)) return crashed(fault);
    if (r.stray != Stray::kNone) {
      strayFault(r, S, fault);
      if (r.stray == Stray::kPastIds || r.stray == Stray::kPastGates) child_->reap();
      return 0;
    }
    if (S > 0) {
      std::memcpy(ids, region + l.ids, S * 4);
      std::memcpy(gates, region + l.gates, S * 4);
    }
    return r.status;
  }

  int crashed(RouteFault& fault) const {
    const Child::Ending end = child_->reap();
    fault = {ViolationKind::kCrash, "the library under test died during the call: " + end.detail,
             end.tag};
    return 0;
  }

  static void strayFault(const Reply& r, size_t slots, RouteFault& fault) {
    const char* access = r.write ? "wrote" : "read";
    switch (r.stray) {
      case Stray::kPastIds:
        fault = {ViolationKind::kOutOfBoundsWrite,
                 fmt::format("it {} past the end of ids (tokens * k = {} entries): the guard page "
                             "after ids was hit",
                             access, slots),
                 "ids"};
        break;
      case Stray::kPastGates:
        fault = {ViolationKind::kOutOfBoundsWrite,
                 fmt::format("it {} past the end of gates (tokens * k = {} entries): the guard "
                             "page after gates was hit",
                             access, slots),
                 "gates"};
        break;
      case Stray::kBeforeIds:
        fault = {ViolationKind::kOutOfBoundsWrite,
                 "it wrote before the start of ids: the canary bytes there changed", "before-ids"};
        break;
      default:
        fault = {ViolationKind::kOutOfBoundsWrite,
                 "it wrote before the start of gates: the canary bytes there changed",
                 "before-gates"};
        break;
    }
  }

  std::unique_ptr<Child> child_;
  RouterOptions options_;
  mutable double campaignTimeout_ = 0;  // setCallTimeout: the campaign's watchdog
};

}  // namespace

std::unique_ptr<Router> openIsolatedLibrary(const std::string& path, const RouterOptions& options) {
  // A child that dies mid-request must not take the judge with it through SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  auto child = std::make_unique<Child>(path, options.abi);
  Child::Hello h = child->start(kLoadSeconds);
  if (h.code == HelloCode::kError) throw RouterLoadError(h.text);
  const bool v2 = child->version() == 2;
  Contract contract;
  if (v2) contract.abi = std::string(kAbiV2);
  if (h.code == HelloCode::kContract) {
    try {
      contract = parseContractFor(h.text, v2);
    } catch (const std::invalid_argument& e) {
      throw RouterLoadError(fmt::format("router library {}: {}", path, e.what()));
    }
  }
  return std::make_unique<IsolatedLibraryRouter>(libraryRouterName(path, contract), contract,
                                                 std::move(child), options);
}

}  // namespace moe::fuzz
