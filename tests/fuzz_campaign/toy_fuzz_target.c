// A stand-in libFuzzer target for the campaign runner's own test: it has one planted
// bug (inputs starting "MoE") that it reports the way moe-oracle's targets do, with the
// stable signature line and, when MOE_REPRODUCER_DIR is set, a reproducer JSON. This
// lets the runner's fork/merge/minimise/dedup path be tested without the real targets.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 3 && data[0] == 'M' && data[1] == 'o' && data[2] == 'E') {
    const char* dir = getenv("MOE_REPRODUCER_DIR");
    if (dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/toy-planted-bug.json", dir);
      FILE* f = fopen(path, "w");
      if (f) {
        fputs("{\"algorithm\": \"moe-topk-routing\", \"testGroups\": []}\n", f);
        fclose(f);
      }
    }
    fprintf(stderr, "moe-oracle: toy-planted-bug-E3-k1\n");
    abort();
  }
  return 0;
}
