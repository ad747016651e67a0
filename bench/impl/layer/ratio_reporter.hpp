// A console reporter that also remembers each run's mean CPU time per iteration, so a
// benchmark program can print ratios of runs measured in the same process (speed targets
// are ratios). CPU time, not wall time: the programs using it are single-threaded, and on a
// shared machine wall time also counts other people's work.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace moe::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && run.iterations > 0) {
        seconds_[run.benchmark_name()] =
            run.cpu_accumulated_time / static_cast<double>(run.iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  /// Mean CPU seconds per iteration of the run called `name`, or 0 if it did not run.
  double seconds(const std::string& name) const {
    const auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace moe::bench
