#include "moe/fuzz/out_dir.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "moe/fuzz/report.hpp"

namespace moe::fuzz {

std::string outProblem(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || !std::filesystem::is_directory(out) || access(out.c_str(), W_OK) != 0) {
    return fmt::format("{} cannot be created or written{}{}", out, ec ? ": " : "",
                       ec ? ec.message() : "");
  }
  return "";
}

std::string reproducerPath(const std::string& outDir, std::string_view name, ViolationKind kind,
                           std::string_view tag, std::string_view shapeClass, uint64_t seed) {
  std::string stem = fmt::format("{}-{}", name, kindName(kind));
  if (!tag.empty()) stem += fmt::format("-{}", tag);
  if (!shapeClass.empty()) stem += fmt::format("-on-{}", shapeClass);
  stem = safeFileStem(fmt::format("{}-seed{}", stem, seed));
  return (std::filesystem::path(outDir) / (stem + ".json")).string();
}

std::string writeReproducer(const std::string& path, const nlohmann::json& file) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream out(path);
  out << file.dump(2) << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "moe-oracle fuzz: cannot write reproducer %s; the finding follows\n",
                 path.c_str());
    return "";
  }
  std::filesystem::permissions(
      path,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::group_read | std::filesystem::perms::others_read,
      ec);
  return path;
}

}  // namespace moe::fuzz
