// What route_bench.cpp and family_bench.cpp share: a console reporter that keeps each run's
// rate, so that ratios measured in one run (router / roof, router / baseline) can be
// printed at the end, and the main that runs the benchmarks and then prints them.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace moe::bench {

// Keeps every run's `counter` (a rate such as tokens_per_s or bytes_per_second); each
// bench prints its own table from find() in printRatios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(std::string counter) : counter_(std::move(counter)) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      const auto it = run.counters.find(counter_);
      if (!run.error_occurred && it != run.counters.end()) {
        rate_[run.benchmark_name()] = it->second.value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  virtual void printRatios() const = 0;

 protected:
  // The rate of the benchmark of that name, or 0 when it did not run (filtered out, or
  // failed).
  double find(const std::string& name) const {
    const auto it = rate_.find(name);
    return it == rate_.end() ? 0.0 : it->second;
  }

 private:
  std::string counter_;
  std::map<std::string, double> rate_;
};

// The CPU the figures come from, from /proc/cpuinfo's first processor: "AMD EPYC
// (AuthenticAMD family 25 model 17)". The same kernels' share of the roof moves by 2x
// between hosts (AMD Zen 4 runs a 512-bit operation as two halves, Zen 5 whole), so every
// figure needs its host.
inline std::string hostCpu() {
  std::ifstream in("/proc/cpuinfo");
  std::map<std::string, std::string> field;
  for (std::string line; std::getline(in, line) && !line.empty();) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    field.emplace(key, colon + 2 <= line.size() ? line.substr(colon + 2) : "");
  }
  if (field.count("model name") == 0) return "unknown (no /proc/cpuinfo model name)";
  return field["model name"] + " (" + field["vendor_id"] + " family " + field["cpu family"] +
         " model " + field["model"] + ")";
}

// The benches' main: registers, runs what the flags select, prints the ratios and the
// host they were measured on.
inline int runBenchmarks(int argc, char** argv, void (*registerAll)(), RatioReporter& reporter) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::string host = hostCpu();
  benchmark::AddCustomContext("host_cpu", host);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.printRatios();
  std::printf("host: %s\n", host.c_str());
  benchmark::Shutdown();
  return 0;
}

}  // namespace moe::bench
