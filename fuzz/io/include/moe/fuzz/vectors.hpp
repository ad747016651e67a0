// Golden-vector / reproducer JSON (Wycheproof's layout, shared with lean-traces/): loading,
// validating, replaying and explaining. Group types other than RoutingTest and
// RouterReproducer are skipped, and the replay says so.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// The version of this file layout that this build writes and reads: the top-level
// "formatVersion" of a reproducer. A file without the field is version 1 (every file written
// before the field existed has this layout, the golden vectors included); a later version is
// refused, since its fields may mean what this build cannot know.
inline constexpr int64_t kVectorFormatVersion = 1;

// Reads and parses a file; throws std::runtime_error naming the path and the problem.
nlohmann::json loadVectorFile(const std::string& path);
// Throws std::invalid_argument naming the first thing that breaks the layout, a
// "formatVersion" other than 1 to kVectorFormatVersion included.
void checkVectorLayout(const nlohmann::json& file);

// A RoutingTest entry: one token.
struct RoutingVector {
  int64_t tcId = 0;
  std::string result;  // valid | acceptable | invalid
  int32_t k = 0;
  std::vector<float> logits;
  std::optional<std::vector<int64_t>> ranks, keptExperts;
  std::optional<std::vector<float>> exps32, probs32, gates32;
};
RoutingVector parseRoutingTest(const nlohmann::json& test);
// A RouterReproducer entry as a case: the case model's own JSON (caseFromJSON) embedded in
// the test; older files without "variant" read as variant 0.
Case caseOfReproducer(const nlohmann::json& test);

// One failed test: what the verdict found, for `replay --json`.
struct ReplayFailure {
  int64_t tcId = 0;
  std::string kind;  // a violation kind, or "mismatch" / "error" for other failures
  std::string certificate;
};

inline void to_json(nlohmann::json& j, const ReplayFailure& f) {
  j = {{"tcId", f.tcId}, {"kind", f.kind}, {"certificate", f.certificate}};
}

struct ReplaySummary {
  int passed = 0, failed = 0, skipped = 0;
  std::vector<ReplayFailure> failures;
  int malformed = 0;               // of `failed`: tests that could not be read at all
  std::vector<std::string> lines;  // one per failure or skip, saying why
};

// Replays every test: RoutingTest against the oracle (and `impl` through the verdict when
// given); RouterReproducer by re-judging the recorded output (it must still be the recorded
// violation) and re-running `impl` or the named built-in router (it must not violate).
ReplaySummary replayVectors(const nlohmann::json& file, const Router* impl,
                            const VerdictConfig& config);

// One case told for a person: each expert's logit, rank, kept or not, exact probability
// and gate intervals, the implementation's output, the margins, the verdict and why.
// A recorded output judged again without its router names a gate cause by number alone; the
// run that found it had rerun the router and found the cause did not hold (recorded
// gate-error): the verdict says so again, as gate-error.
void keepRecordedDowngrade(CaseResult& r, std::string_view recordedKind);

// Tests that cannot be read are told as such and counted in `*unexplained` when given.
std::string explainVectors(const nlohmann::json& file, const Router* impl,
                           const VerdictConfig& config, int* unexplained = nullptr);

// True when the file holds DispatchReproducer groups (replay, explain and snippet send it to
// the dispatch door's readers).
bool isDispatchVectorFile(const nlohmann::json& file);
// True when the file holds LayerReproducer groups (sent to the layer door's readers).
bool isLayerVectorFile(const nlohmann::json& file);

}  // namespace moe::fuzz
