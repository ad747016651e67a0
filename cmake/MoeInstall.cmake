# `cmake --install build [--prefix P]`: what a kernel repository links (docs/install.md).
#   bin/moe-oracle                    the command
#   include/moe/...                   the judge's headers (oracle, fuzz case/routers/judge/io/run),
#                                     the C ABI (route_abi.h, layer_abi.h), the matcher
#   lib/libmoe_*.a                    the judge's static libraries
#   lib/cmake/MoeOracle/              the package: find_package(MoeOracle) gives
#                                     MoeOracle::judge, MoeOracle::abi and, when GoogleTest was found at
#                                     build time, MoeOracle::gtest (EXPECT_ROUTE_MATCH)
# Included by the top-level CMakeLists.txt after every folder, so that it sees every target.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MOE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/MoeOracle)

# MoeOracle::judge: the judge and what it reads and writes (case, routers, verdict, I/O, the
# run, the oracle), without the command's option parsing.
add_library(moe_judge INTERFACE)
target_link_libraries(moe_judge INTERFACE moe_fuzz_run)
set_target_properties(moe_judge PROPERTIES EXPORT_NAME judge)

# MoeOracle::abi (moe_abi, defined in impl/ beside the headers): the C ABI's headers alone.

# The libraries an installed judge is made of: the judge's own and those its static archives
# need at link time (the oracle's MPFR code, the built-in routers behind openRouter).
set(moe_installed_libraries moe_oracle moe_impl moe_fuzz_case moe_fuzz_routers moe_fuzz_judge
    moe_fuzz_io moe_fuzz_run)

# A library's include/ folder is used from the source tree when building and from
# <prefix>/include once installed: the folders' PUBLIC include paths are wrapped here, in one
# place, rather than in each folder's CMakeLists.txt.
function(moe_install_include_paths target)
  get_target_property(paths ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  foreach(path ${paths})
    if(path MATCHES "^\\$<")  # already a generator expression: the folder chose
      list(APPEND wrapped "${path}")
    else()
      list(APPEND wrapped "$<BUILD_INTERFACE:${path}>")
    endif()
  endforeach()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
endfunction()

foreach(target ${moe_installed_libraries})
  moe_install_include_paths(${target})
  string(REGEX REPLACE "^moe_" "" export_name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

install(TARGETS ${moe_installed_libraries} moe_judge moe_abi EXPORT MoeOracleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS moe-oracle RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers: the judge's folders whole; of impl/, only the C ABI (the kernels stay private).
foreach(dir oracle/include fuzz/case/include fuzz/routers/include fuzz/judge/include
        fuzz/io/include fuzz/run/include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/impl/include/moe/route_abi.h
              ${PROJECT_SOURCE_DIR}/impl/include/moe/layer_abi.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/moe)

# The matcher, when tests/support was configured (MOE_BUILD_TESTS, GoogleTest found).
set(MOE_PACKAGE_HAS_GTEST OFF)
if(TARGET moe_test_support)
  set(MOE_PACKAGE_HAS_GTEST ON)
  install(TARGETS moe_test_seed moe_test_support EXPORT MoeOracleTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/tests/support/include/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

install(EXPORT MoeOracleTargets NAMESPACE MoeOracle:: DESTINATION ${MOE_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/MoeOracleConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/MoeOracleConfig.cmake
  INSTALL_DESTINATION ${MOE_INSTALL_CMAKEDIR})
# 0.y: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/MoeOracleConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/MoeOracleConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/MoeOracleConfigVersion.cmake
        DESTINATION ${MOE_INSTALL_CMAKEDIR})
