include(GoogleTest)

# moe_add_gtest(<name> LABELS <label>... SOURCES <src>... LIBS <lib>...)
# One GoogleTest executable; with one label every TEST in it becomes a ctest entry carrying
# it, so `ctest -L oracle` runs exactly the oracle's suites. gtest_discover_tests flattens a
# list of labels (the second would become a property name), so with several labels the
# executable is one ctest entry carrying all of them.
function(moe_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS;SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  list(LENGTH ARG_LABELS label_count)
  if(label_count GREATER 1)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
  else()
    gtest_discover_tests(${name}
      DISCOVERY_MODE PRE_TEST
      PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
