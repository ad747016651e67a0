// --out, for every door: made and tried before any case runs, where a finding's reproducer
// goes in it, and how it is written.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

// "" when `out` could be made and can be written, else why not: tried before any case runs,
// so that a finding is never lost to it.
std::string outProblem(const std::string& out);

// The reproducer's path: the name, kind, tag and shape class as the signature says them, and
// the seed, so that runs do not overwrite each other (safeFileStem: never a path elsewhere).
std::string reproducerPath(const std::string& outDir, std::string_view name, ViolationKind kind,
                           std::string_view tag, std::string_view shapeClass, uint64_t seed);

// Writes the reproducer (read-only for all but its owner); on failure says so on stderr and
// returns "" (the caller still prints the whole report, so the finding is not lost).
std::string writeReproducer(const std::string& path, const nlohmann::json& file);

}  // namespace moe::fuzz
