include(GoogleTest)

# moe_add_gtest(<name> LABELS <label>... SOURCES <src>... LIBS <lib>...)
# One GoogleTest executable; every TEST in it becomes a ctest entry carrying LABELS,
# so `ctest -L oracle` runs exactly the oracle's suites.
function(moe_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS;SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
