#!/bin/bash -eu
# Builds moe-oracle's libFuzzer targets into $OUT, the way OSS-Fuzz/ClusterFuzzLite calls it
# (CC, CXX, CFLAGS, CXXFLAGS, LIB_FUZZING_ENGINE, SRC, WORK, OUT set by the builder image).
# It also runs outside Docker with defaults for each, e.g.
#   OUT=/tmp/cflite-out .clusterfuzzlite/build.sh
# Leaves in $OUT: each fuzz_* binary, <target>.dict, <target>_seed_corpus.zip (from
# corpus/<target>/), <target>.options, and lib/ with the shared libraries the binaries
# need that a bare runner image lacks (found through rpath $ORIGIN/lib).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -f $here/../CMakeLists.txt ]]; then
  repo=$(cd "$here/.." && pwd)  # run from the checkout
else
  repo=${SRC:-/src}/moe-oracle  # run as $SRC/build.sh inside the image
fi
: "${OUT:?set OUT to the folder the fuzzers should go to}"
: "${SRC:=$(dirname "$repo")}"
: "${WORK:=$(mktemp -d -t moe-cflite-work.XXXXXX)}"
: "${CC:=clang-14}"
: "${CXX:=clang++-14}"
sanitizers="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
: "${CFLAGS:=-O1 -g -fno-omit-frame-pointer $sanitizers -fsanitize=fuzzer-no-link}"
: "${CXXFLAGS:=$CFLAGS}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
# base-builder compiles C++ against libc++, but GMP's C++ part, fmt and Highway are built
# against libstdc++ (apt, install-deps.sh): mixing the two fails to link, so this project
# uses libstdc++ throughout (fine for ASan and UBSan; MSan is not offered in project.yaml).
CXXFLAGS=${CXXFLAGS//-stdlib=libc++/}
jobs=${MOE_BUILD_JOBS:-$(nproc)}
mkdir -p "$OUT" "$WORK"

cmake -S "$repo" -B "$WORK/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DCMAKE_C_FLAGS_RELEASE="" -DCMAKE_CXX_FLAGS_RELEASE="" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,\$ORIGIN/lib" \
  -DMOE_LIBFUZZER=ON -DMOE_FUZZING_ENGINE="$LIB_FUZZING_ENGINE" \
  -DMOE_BUILD_TESTS=OFF -DMOE_BUILD_BENCH=OFF -DMOE_CUDA=OFF

# fuzz_external is left out: it fuzzes a library named at run time by MOE_IMPL, which a
# ClusterFuzzLite runner cannot set (it would only ever report "target exited"); the
# in-tree routers it would load are fuzz_route's already. scripts/campaign runs it.
targets=(fuzz_route fuzz_gates fuzz_layer fuzz_capacity fuzz_vectors)
known=()
for t in "${targets[@]}"; do
  # A target the checkout does not define yet is left out, not an error.
  if ninja -C "$WORK/build" -t targets all | grep -q "^$t:"; then
    known+=("$t")
  fi
done
if ((${#known[@]} == 0)); then
  echo "build.sh: no libFuzzer target is defined (fuzz/targets/CMakeLists.txt)" >&2
  exit 3  # distinct, so the ctest can tell "nothing to build yet" from a failed build
fi
cmake --build "$WORK/build" -j "$jobs" --target "${known[@]}"

mkdir -p "$OUT/lib"
for t in "${known[@]}"; do
  cp "$WORK/build/bin/$t" "$OUT/$t"
  dict=$repo/fuzz/dict/$t.dict
  if [[ ! -f $dict ]]; then
    dicts=("$repo"/fuzz/dict/*.dict)   # sorted; the pattern itself when none matches
    dict=${dicts[0]}
  fi
  if [[ -n $dict && -f $dict ]]; then
    cp "$dict" "$OUT/$t.dict"
  fi
  {
    echo "[libfuzzer]"
    [[ -f $OUT/$t.dict ]] && echo "dict = $t.dict"
    # The JSON loader must refuse sizes that claim gigabytes, not allocate them.
    [[ $t == fuzz_vectors ]] && echo "rss_limit_mb = 2048"
    echo "use_value_profile = 1"
  } > "$OUT/$t.options"
  if [[ -d $repo/corpus/$t ]] && [[ -n $(ls -A "$repo/corpus/$t") ]]; then
    rm -f "$OUT/${t}_seed_corpus.zip"
    if command -v zip >/dev/null; then
      (cd "$repo/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    else
      (cd "$repo/corpus/$t" && python3 -m zipfile -c "$OUT/${t}_seed_corpus.zip" ./*)
    fi
  fi
  # Shared libraries a runner image may lack (GMP, MPFR, Highway, fmt, ...).
  ldd "$OUT/$t" | awk '/=> \// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libgcc_s.so*) ;;
      libstdc++.so*) ;;
      *) [[ -e $OUT/lib/$(basename "$lib") ]] || cp -L "$lib" "$OUT/lib/" ;;
    esac
  done
done
echo "build.sh: built ${known[*]} into $OUT"
