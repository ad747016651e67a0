// A main for builds without libFuzzer (g++): replays every file named on the command line,
// or every file under each directory named, through LLVMFuzzerTestOneInput. A finding
// aborts with its report, as under libFuzzer; ctest uses this to replay corpus/<target>/.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replayFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replaying %s (%zu bytes)\n", path.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...  (replays inputs; a finding aborts)\n", argv[0]);
    return 2;
  }
  int failures = 0, replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(p)) {
        if (entry.is_regular_file()) {
          failures += replayFile(entry.path());
          ++replayed;
        }
      }
    } else {
      failures += replayFile(p);
      ++replayed;
    }
  }
  std::fprintf(stderr, "%d inputs replayed, %d unreadable\n", replayed, failures);
  return failures == 0 ? 0 : 1;
}
