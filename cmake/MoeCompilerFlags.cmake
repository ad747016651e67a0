# Results must be bit-exact wherever the spec is evaluated in binary32/binary64, so
# floating-point contraction is off for every target and -ffast-math is never used.
add_compile_options(-ffp-contract=off -fno-fast-math -Wall -Wextra)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12 warns on Eigen and GMP internals that we cannot change.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
endif()
