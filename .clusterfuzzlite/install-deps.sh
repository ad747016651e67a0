#!/bin/bash -eu
# Dependencies for the ClusterFuzzLite image (Ubuntu 20.04): GMP/MPFR from apt, the rest
# at the versions Debian 12 has (what the project is tested with), built from source.
apt-get update
apt-get install -y --no-install-recommends libgmp-dev libmpfr-dev pkg-config ninja-build \
  zip git ca-certificates
pip3 install --no-cache-dir "cmake>=3.25,<4"
fetch() {  # fetch URL TAG DIR
  git clone --depth 1 --branch "$2" "$1" "/tmp/deps/$3"
}
install_cmake() {  # install_cmake DIR [cmake options]
  local dir=$1
  shift
  cmake -S "/tmp/deps/$dir" -B "/tmp/deps/$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_TESTING=OFF "$@"
  cmake --build "/tmp/deps/$dir/build"
  cmake --install "/tmp/deps/$dir/build"
}
mkdir -p /tmp/deps
fetch https://gitlab.com/libeigen/eigen.git 3.4.0 eigen
install_cmake eigen -DEIGEN_BUILD_DOC=OFF
fetch https://github.com/nlohmann/json.git v3.11.2 json
install_cmake json -DJSON_BuildTests=OFF
fetch https://github.com/fmtlib/fmt.git 9.1.0 fmt
install_cmake fmt -DFMT_TEST=OFF -DFMT_DOC=OFF -DBUILD_SHARED_LIBS=OFF
fetch https://github.com/CLIUtils/CLI11.git v2.1.2 cli11
install_cmake cli11 -DCLI11_BUILD_TESTS=OFF -DCLI11_BUILD_EXAMPLES=OFF -DCLI11_BUILD_DOCS=OFF
fetch https://github.com/google/highway.git 1.0.3 highway
install_cmake highway -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF
rm -rf /tmp/deps
