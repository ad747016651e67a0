#pragma once
// A small, self-contained SHA-256 (FIPS 180-4), so that the staleness check of the Lean
// vectors needs no tool outside the build: the vectors record the sha256 of Spec.lean and
// Export.lean, and the replay recomputes it from the files in the checkout.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe::lean {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hexDigest();

 private:
  void compressBlock(const unsigned char* block);
  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t totalBytes_ = 0;
};

std::string sha256Hex(std::string_view bytes);

// sha256 of a file's bytes; throws std::runtime_error naming the file if it cannot be read.
std::string sha256OfFile(const std::string& path);

}  // namespace moe::lean
