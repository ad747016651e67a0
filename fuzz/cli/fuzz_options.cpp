#include "fuzz_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <exception>

namespace moe::fuzz {

namespace {

// A number checked by the table's rule (numberProblem): CLI11's own range check prints the
// limits of double with 309 digits and lets nan through.
CLI::Validator numberCheck(FuzzCheck check) {
  return CLI::Validator(
      [check](std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return "not a number: " + text;
        } catch (const std::exception&) {
          return "not a number: " + text;
        }
        const std::string why = numberProblem(check, v);
        return why.empty() ? "" : text + " " + why;
      },
      check == FuzzCheck::kPositive ? "NUMBER > 0" : "NUMBER >= 0");
}

CLI::Validator seedCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
          return "--seed takes a whole number from 0 to 2^64-1, got " + text;
        }
        return "";
      },
      "0..2^64-1");
}

void addCheck(CLI::Option* option, FuzzCheck check) {
  switch (check) {
    case FuzzCheck::kPositive:
    case FuzzCheck::kNonNegative:
      option->check(numberCheck(check));
      break;
    case FuzzCheck::kSeed:
      option->check(seedCheck());
      break;
    case FuzzCheck::kJobs:
      option->check(CLI::Range(1, kMaxJobs));
      break;
    case FuzzCheck::kTieOrder:
      option->check(CLI::IsMember({"lowest-index", "any"}));
      break;
    case FuzzCheck::kAbi:
      option->check(CLI::IsMember({std::string(kAbiV1), std::string(kAbiV2),
                                   std::string(kAbiDispatchV1), std::string(kAbiLayerV1)}));
      break;
    case FuzzCheck::kNone:
      break;
  }
}

}  // namespace

CLI::Option* addFuzzOptions(CLI::App* cmd, FuzzRequest& request, FuzzWhere where) {
  CLI::Option* seed = nullptr;
  for (const FuzzOption& o : fuzzOptions()) {
    if (o.flag.empty() || (o.where & where) == 0) continue;
    const std::string flag(o.flag), help(o.help);
    CLI::Option* option = std::visit(
        [&](auto member) -> CLI::Option* {
          auto& value = request.*member;
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) {
            return cmd->add_flag(flag, value, help);
          } else {
            return cmd->add_option(flag, value, help);
          }
        },
        o.field);
    addCheck(option, o.check);
    if (o.required) option->required();
    if (o.check == FuzzCheck::kSeed) seed = option;
  }
  return seed;
}

int fuzzRun(const FuzzRequest& request, const std::string& header,
            const std::function<RunOutcome()>& run, const volatile std::sig_atomic_t* stop) {
  if (const std::string why = outProblem(request.outDir); !why.empty()) {
    std::fprintf(stderr, "moe-oracle fuzz: --out %s\n", why.c_str());
    return 2;
  }
  std::fputs(header.c_str(), stderr);
  return printOutcome(run(), request.json, stop);
}

}  // namespace moe::fuzz
