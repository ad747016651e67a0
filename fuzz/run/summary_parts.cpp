#include "moe/fuzz/summary_parts.hpp"

#include <fmt/format.h>

namespace moe::fuzz {

nlohmann::json findingJSON(const std::string& signature, ViolationKind kind, const std::string& tag,
                           uint64_t count, const std::string& reproducer, nlohmann::json shape) {
  return {{"signature", signature},
          {"kind", std::string(kindName(kind))},
          {"tag", tag},
          {"count", count},
          {"reproducer", reproducer},
          {"shape", std::move(shape)}};
}

nlohmann::json countsJSON(const std::map<std::string, uint64_t>& counts) {
  return counts.empty() ? nlohmann::json::object() : nlohmann::json(counts);
}

std::string countsText(const std::map<std::string, uint64_t>& counts) {
  std::string out;
  for (const auto& [name, n] : counts) out += fmt::format(" {}:{}", name, n);
  return out;
}

std::string insufficientCoverageLine(uint64_t tokens, uint64_t minTokens, uint64_t abstained,
                                     uint64_t cases) {
  return fmt::format(
      "insufficient coverage: {} tokens judged (at least {} needed), {} of {} cases "
      "abstained: this run is not a pass (exit 3)\n",
      tokens, minTokens, abstained, cases);
}

std::string findingLine(ViolationKind kind, const std::string& signature, uint64_t count,
                        const std::string& reproducer, const std::string& smallest,
                        const std::string& drawn) {
  return fmt::format("violation {} ({}): {} case(s); smallest reproducer {} ({}; drawn at {})\n",
                     kindName(kind), signature, count,
                     reproducer.empty() ? "(not saved)" : reproducer, smallest, drawn);
}

std::string closingLines(bool anyFinding, bool insufficient, uint64_t tokens, uint64_t minTokens,
                         uint64_t abstained, uint64_t cases, bool interrupted) {
  std::string out;
  if (!anyFinding && insufficient)
    out += insufficientCoverageLine(tokens, minTokens, abstained, cases);
  return out + interruptedLine(interrupted);
}

std::string interruptedLine(bool interrupted) {
  return interrupted ? "interrupted: the summary covers the cases run until the signal\n" : "";
}

}  // namespace moe::fuzz
