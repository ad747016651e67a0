// moe-oracle: fuzz / replay / explain / reproduce / list (docs/fuzz.md). Exit codes: 0 = no
// violation, 1 = a violation or a failed replay, 2 = bad usage, unreadable input or a router
// that cannot be loaded, 3 = insufficient coverage (too few tokens judged, or most cases
// abstained), 130 / 143 = interrupted by SIGINT / SIGTERM (summary still printed).
#include "moe/fuzz/command.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>

#include "dispatch_command.hpp"
#include "fuzz_options.hpp"
#include "layer_command.hpp"
#include "moe/fuzz/fuzz_request.hpp"
#include "moe/fuzz/guarded_main.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/run_header.hpp"
#include "moe/fuzz/snippet.hpp"
#include "moe/fuzz/vectors.hpp"
#include "reproduce.hpp"

#ifndef MOE_ORACLE_VERSION
#define MOE_ORACLE_VERSION "unknown"
#endif

namespace {

using namespace moe::fuzz;

volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void onStopSignal(int sig) {
  gStopSignal = sig;
}

// How a shared library runs, as the command's flags ask (every door).
RouterOptions routerOptions(const FuzzRequest& r) {
  RouterOptions o;
  o.abi = r.abi;
  o.inProcess = r.inProcess;
  o.callTimeout = r.callTimeout;
  o.stop = &gStopSignal;
  return o;
}

DoorOptions doorOptions(const FuzzRequest& r) {
  DoorOptions o;
  o.inProcess = r.inProcess;
  o.callTimeout = r.callTimeout;
  o.stop = &gStopSignal;
  return o;
}

void catchStopSignals() {
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
}

// Another door's shape flags, refused (exit 2) with the reason; false when none was given.
bool refusesFlags(const FuzzRequest& f, const std::string& door) {
  const bool dispatchFlags = !f.block.empty() || !f.capacity.empty();
  const bool layerFlags = !f.hidden.empty() || !f.intermediate.empty();
  if (door == kAbiDispatchV1 && !f.family.empty()) {
    std::fprintf(stderr, "moe-oracle fuzz: --family is for routers (moe_route_v2), not %s\n",
                 door.c_str());
  } else if (door == kAbiLayerV1 && dispatchFlags) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --block and --capacity are for a dispatch kernel "
                 "(moe_dispatch_v1), not %s\n",
                 door.c_str());
  } else if (door.empty() && dispatchFlags) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --block and --capacity are for a dispatch kernel "
                 "(moe_dispatch_v1); %s is fuzzed as a router\n",
                 f.impl.c_str());
  } else if (door.empty() && layerFlags) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --hidden and --intermediate are for a fused layer "
                 "(moe_layer_v1); %s is fuzzed as a router\n",
                 f.impl.c_str());
  } else {
    return false;
  }
  return true;
}

// Builds a door's run options; on a bad shape list or recipe says why and returns false.
bool optionsOrSay(const std::function<void()>& make) {
  try {
    make();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moe-oracle fuzz: %s\n", e.what());
    return false;
  }
  return true;
}

int runDispatchFuzz(const FuzzRequest& f) {
  std::unique_ptr<Dispatcher> d = openDispatcherOrSay(f.impl, "fuzz", doorOptions(f));
  if (!d) return 2;
  DispatchCampaignOptions o;
  if (!optionsOrSay([&] { o = dispatchCampaignOptions(f, d->contract().shapes); })) return 2;
  o.stop = &gStopSignal;
  return fuzzRun(
      f, dispatchRunHeader(*d, o), [&] { return runOutcome(runDispatchCampaign(*d, o)); }, o.stop);
}

int runLayerFuzz(const FuzzRequest& f) {
  std::unique_ptr<LayerKernel> kernel = openLayerOrSay(f.impl, "fuzz", doorOptions(f));
  if (!kernel) return 2;
  LayerCampaignOptions o;
  if (!optionsOrSay([&] { o = layerCampaignOptions(f, kernel->contract(), FuzzDoor::kCommand); })) {
    return 2;
  }
  o.draw.badCalls = true;  // a C ABI has statuses to judge
  o.stop = &gStopSignal;
  return fuzzRun(
      f, layerRunHeader(*kernel, o), [&] { return runOutcome(runLayerCampaign(*kernel, o)); },
      o.stop);
}

std::unique_ptr<Router> openOrSay(const std::string& impl, const char* cmd,
                                  const RouterOptions& options) {
  try {
    return openRouter(impl, options);
  } catch (const RouterLoadError& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    return nullptr;
  }
}

int runRouterFuzz(const FuzzRequest& f) {
  std::unique_ptr<Router> router = openOrSay(f.impl, "fuzz", routerOptions(f));
  if (!router) return 2;
  CampaignOptions o;
  if (!optionsOrSay([&] {
        o = campaignOptions(f, router->contract(), router->name(), FuzzDoor::kCommand);
      })) {
    return 2;
  }
  o.stop = &gStopSignal;
  return fuzzRun(
      f, routerRunHeader(*router, o, f), [&] { return runOutcome(runCampaign(*router, o)); },
      o.stop);
}

// `moe-oracle fuzz` through the door --impl and --abi name.
int runFuzz(const FuzzRequest& f) {
  const std::string door = usesLayerDoor(f.impl, f.abi)      ? std::string(kAbiLayerV1)
                           : usesDispatchDoor(f.impl, f.abi) ? std::string(kAbiDispatchV1)
                                                             : std::string();
  if (refusesFlags(f, door)) return 2;
  catchStopSignals();
  if (door == kAbiLayerV1) return runLayerFuzz(f);
  if (door == kAbiDispatchV1) return runDispatchFuzz(f);
  return runRouterFuzz(f);
}

// The kernel --impl names for replay and explain, through its door (none without --impl).
struct Kernels {
  std::unique_ptr<Router> router;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<LayerKernel> layer;

  // False (and why on stderr) when it cannot be opened.
  bool open(const std::string& impl, const char* cmd, const FuzzRequest& running) {
    if (impl.empty()) return true;
    if (usesLayerDoor(impl, running.abi)) {
      return (layer = openLayerOrSay(impl, cmd, doorOptions(running))) != nullptr;
    }
    if (usesDispatchDoor(impl, running.abi)) {
      return (dispatcher = openDispatcherOrSay(impl, cmd, doorOptions(running))) != nullptr;
    }
    return (router = openOrSay(impl, cmd, routerOptions(running))) != nullptr;
  }
};

int runReplay(const std::vector<std::string>& files, const std::string& impl, bool json,
              const FuzzRequest& running, const VerdictConfig& config) {
  Kernels kernels;
  if (!kernels.open(impl, "replay", running)) return 2;
  // Exit 2 when any file or test cannot be read (bad input) or nothing could be run, else 1
  // when a test fails.
  int totalFailed = 0, totalPassed = 0, totalSkipped = 0, unreadable = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& path : files) {
    try {
      nlohmann::json file = loadVectorFile(path);
      ReplaySummary s = isLayerVectorFile(file) ? replayLayerVectors(file, kernels.layer.get())
                        : isDispatchVectorFile(file)
                            ? replayDispatchVectors(file, kernels.dispatcher.get())
                            : replayVectors(file, kernels.router.get(), config);
      for (const auto& line : s.lines) std::fprintf(stderr, "%s: %s\n", path.c_str(), line.c_str());
      std::fprintf(stderr, "%s: %d passed, %d failed, %d skipped\n", path.c_str(), s.passed,
                   s.failed, s.skipped);
      totalFailed += s.failed;
      unreadable += s.malformed;
      totalPassed += s.passed;
      totalSkipped += s.skipped;
      report.push_back({{"file", path},
                        {"passed", s.passed},
                        {"failed", s.failed},
                        {"skipped", s.skipped},
                        {"messages", s.lines},
                        {"failures", s.failures}});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moe-oracle replay: %s\n", e.what());
      ++totalFailed;
      ++unreadable;
      report.push_back({{"file", path}, {"error", e.what()}});
    }
  }
  if (json) {
    std::cout << nlohmann::json{{"passed", totalPassed},
                                {"failed", totalFailed},
                                {"skipped", totalSkipped},
                                {"unreadable", unreadable},
                                {"files", report}}
                     .dump()
              << "\n";
  }
  if (unreadable > 0) return 2;
  if (totalPassed + totalFailed == 0) {
    std::fprintf(stderr, "moe-oracle replay: no test read: nothing in the input could be run\n");
    return 2;
  }
  return totalFailed > 0 ? 1 : 0;
}

// --as python / c: the recorded finding as a program for a bug report. It tells what was
// recorded, so a router to rerun (--impl) has no part in it.
int runSnippet(const std::string& path, const std::string& language, bool withImpl) {
  if (withImpl) {
    std::fprintf(stderr,
                 "moe-oracle explain: --as %s writes the recorded finding; --impl (a rerun) "
                 "goes with --as text only\n",
                 language.c_str());
    return 2;
  }
  try {
    std::cout << reproducerSnippet(loadVectorFile(path), language);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle explain: %s: %s\n", path.c_str(), e.what());
    return 2;
  }
  return 0;
}

int runExplain(const std::string& path, const std::string& impl, const std::string& language,
               const FuzzRequest& running, const VerdictConfig& config) {
  if (language != "text") return runSnippet(path, language, !impl.empty());
  Kernels kernels;
  if (!kernels.open(impl, "explain", running)) return 2;
  try {
    int unexplained = 0;
    const nlohmann::json file = loadVectorFile(path);
    std::cout << (isLayerVectorFile(file)
                      ? explainLayerVectors(file, kernels.layer.get(), &unexplained)
                  : isDispatchVectorFile(file)
                      ? explainDispatchVectors(file, kernels.dispatcher.get(), &unexplained)
                      : explainVectors(file, kernels.router.get(), config, &unexplained));
    if (unexplained > 0) {
      std::fprintf(stderr, "moe-oracle explain: %s: %d test(s) could not be read\n", path.c_str(),
                   unexplained);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle explain: %s\n", e.what());
    return 2;
  }
  return 0;
}

CLI::Option* addFuzz(CLI::App& app, FuzzRequest& f) {
  auto* fuzz = app.add_subcommand(
      "fuzz",
      "fuzz a router against the oracle; on the first violation (or, with --keep-going, at "
      "the end) write shrunk reproducers and exit 1");
  return addFuzzOptions(fuzz, f, kCommandFuzz);
}

int runMain(int argc, char** argv) {
  CLI::App app{
      "moe-oracle: a differential fuzzer for Mixture-of-Experts top-k routing, judged "
      "against a verified reference (exit 0: no violation, 1: violation, 2: usage, 3: "
      "insufficient coverage)"};
  app.set_version_flag("--version", std::string("moe-oracle ") + MOE_ORACLE_VERSION);
  app.require_subcommand(1);
  FuzzRequest f;
  CLI::Option* seed = addFuzz(app, f);

  std::vector<std::string> files;
  std::string replayImpl;
  bool replayJson = false;
  auto* replay = app.add_subcommand("replay",
                                    "replay golden vectors and reproducers; exit 1 on a "
                                    "failing test, 2 on input that cannot be read or holds no "
                                    "runnable test");
  replay->add_option("files", files, "vector files (JSON)")->required()->check(CLI::ExistingFile);
  replay->add_option("--impl", replayImpl, "also run this router (name or .so) on every test");
  replay->add_flag("--json", replayJson, "print a JSON summary on stdout");
  addFuzzOptions(replay, f, kCommandReplay);

  std::string explainFile, explainImpl, explainAs = "text";
  auto* explain = app.add_subcommand("explain", "tell one vector file's cases for a person");
  explain->add_option("file", explainFile, "vector file (JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  explain->add_option("--impl", explainImpl,
                      "router to rerun on each case and explain (default: the recorded output, "
                      "or spec32 for RoutingTest)");
  explain
      ->add_option("--as", explainAs,
                   "text (default): the explanation for a person; python / c: each "
                   "reproducer as a self-contained PyTorch / C99 program for a bug report "
                   "(exact hex floats, the recorded output, the spec's answer, the "
                   "certificate)")
      ->check(CLI::IsMember({"text", "python", "c"}));
  addFuzzOptions(explain, f, kCommandReplay);

  ReproduceFlags reproduceFlags;
  auto* reproduce = addReproduce(app, reproduceFlags);
  auto* list = app.add_subcommand("list", "print the built-in router names, one a line");
  std::string listAbi(kAbiV1);
  list->add_option("--abi", listAbi,
                   "moe_route_v1 (default): every built-in router; moe_route_v2: one router "
                   "per distinct moe_route_v2 kernel (an ISA's probs and logits routers share "
                   "theirs)")
      ->check(CLI::IsMember({std::string(kAbiV1), std::string(kAbiV2)}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool noSubcommand = app.get_subcommands().empty() &&
                              (e.get_name() == "RequiredError" || e.get_name() == "ExtrasError");
    if (noSubcommand && argc > 1 && argv[1][0] != '-') {
      std::fprintf(stderr,
                   "moe-oracle: unknown subcommand %s: the subcommands are fuzz, replay, "
                   "explain, reproduce and list (moe-oracle --help)\n",
                   argv[1]);
      return 2;
    }
    if (noSubcommand) {
      std::fprintf(stderr,
                   "moe-oracle: a subcommand is required: fuzz, replay, explain, reproduce or "
                   "list (moe-oracle --help)\n");
      return 2;
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*list) {
    const auto names = listAbi == kAbiV2 ? builtinRouterNamesV2() : builtinRouterNames();
    for (const auto& name : names) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (*reproduce) return runReproduce(reproduceFlags);
  VerdictConfig config;
  try {
    config = f.verdictConfig();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moe-oracle: %s\n", e.what());
    return 2;
  }
  for (const std::string* impl : {&f.impl, &replayImpl, &explainImpl}) {
    if (impl->empty()) continue;
    if (const std::string why = layerDoorAmbiguity(*impl, f.abi); !why.empty()) {
      std::fprintf(stderr, "moe-oracle: %s\n", why.c_str());
      return 2;
    }
  }
  f.seedGiven = seed->count() > 0;
  if (*app.get_subcommand("fuzz")) return runFuzz(f);
  if (*replay) return runReplay(files, replayImpl, replayJson, f, config);
  if (*explain) return runExplain(explainFile, explainImpl, explainAs, f, config);
  return 2;
}

}  // namespace

namespace moe::fuzz {

int runCommand(int argc, char** argv) {
  return guardedMain("moe-oracle", runMain, argc, argv);
}

}  // namespace moe::fuzz
