# install.consumer (cmake -P): moe-oracle installed into a fresh prefix, then
# examples/consumer built against that prefix alone and its suite run; the planted-bug build
# must fail with the judge's explanation. Any step that fails stops with FATAL_ERROR, naming
# the step and showing its output.
#   -DBUILD_DIR= -DSOURCE_DIR= -DWORK_DIR= -DVERSION= -DGENERATOR= -DCXX_COMPILER=
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR VERSION GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "consumer_check.cmake: -D${var}= is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs one step; stops the test when it fails. `out` receives stdout and stderr together.
function(step name out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE text)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install.consumer: ${name} failed (${rc}):\n${ARGN}\n${text}")
  endif()
  message(STATUS "install.consumer: ${name}: ok")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

step("cmake --install" ignored ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# What the install holds, and that nothing in it points back into the source or build tree
# (the package must work once the clone is gone).
foreach(file bin/moe-oracle include/moe/route_abi.h include/moe/layer_abi.h
        include/moe/test/route_match.hpp include/moe/test/kernel_router.hpp
        include/moe/test/seed.hpp include/moe/fuzz/verdict.hpp include/moe/fuzz/token_text.hpp
        include/moe/oracle/routing.hpp lib/cmake/MoeOracle/MoeOracleConfig.cmake
        lib/cmake/MoeOracle/MoeOracleConfigVersion.cmake lib/cmake/MoeOracle/MoeOracleTargets.cmake)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install.consumer: the install lacks ${file}")
  endif()
endforeach()
file(GLOB package_files ${prefix}/lib/cmake/MoeOracle/*.cmake)
foreach(file ${package_files})
  file(READ ${file} text)
  foreach(tree ${SOURCE_DIR} ${BUILD_DIR})
    string(FIND "${text}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "install.consumer: ${file} names ${tree}")
    endif()
  endforeach()
endforeach()
step("installed moe-oracle --version" version ${prefix}/bin/moe-oracle --version)
if(NOT version MATCHES "${VERSION}")
  message(FATAL_ERROR "install.consumer: moe-oracle --version said \"${version}\", not ${VERSION}")
endif()

# The consumer sees only the prefix: no package registry, no path into this build.
step("configure examples/consumer" configured ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer
     -B ${consumer} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${consumer}/CMakeCache.txt found_at REGEX "^MoeOracle_DIR:")
if(NOT found_at STREQUAL "MoeOracle_DIR:PATH=${prefix}/lib/cmake/MoeOracle")
  message(FATAL_ERROR "install.consumer: MoeOracle found elsewhere: ${found_at}")
endif()
step("build examples/consumer" built ${CMAKE_COMMAND} --build ${consumer})
step("ctest in examples/consumer" tested ${CMAKE_CTEST_COMMAND} --test-dir ${consumer}
     --output-on-failure)
if(NOT tested MATCHES "100% tests passed, 0 tests failed out of [1-9]")
  message(FATAL_ERROR "install.consumer: the consumer's ctest ran no test:\n${tested}")
endif()

# The planted bug: the suite fails, and says why as the judge does (kind, certificate, the
# token's table with the exact gates).
execute_process(COMMAND ${consumer}/my_topk_planted_bug_test RESULT_VARIABLE rc
                OUTPUT_VARIABLE text ERROR_VARIABLE text)
if(rc EQUAL 0)
  message(FATAL_ERROR "install.consumer: the planted bug passed its suite:\n${text}")
endif()
foreach(expected "EXPECT_ROUTE_MATCH" "violation gate-" "why:" "gates of the router's kept set"
        "ran with MOE_TEST_SEED=")
  string(FIND "${text}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR
            "install.consumer: the planted bug's failure does not say \"${expected}\":\n${text}")
  endif()
endforeach()
message(STATUS "install.consumer: the planted bug fails with the judge's explanation: ok")
