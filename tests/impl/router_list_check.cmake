# The router list exists once (impl/src/routers.cpp's kEntries). CMake reads the names from
# it to build one library each; `moe-oracle list` prints them from the registry. This checks
# that both readings agree, so a reformatted table cannot silently drop a library.
#   cmake -DORACLE=<moe-oracle> -DEXPECTED=<a;b;c> -P router_list_check.cmake
execute_process(COMMAND ${ORACLE} list OUTPUT_VARIABLE printed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "moe-oracle list exited ${rc}")
endif()
string(STRIP "${printed}" printed)
string(REPLACE "\n" ";" printed "${printed}")
if(NOT printed STREQUAL EXPECTED)
  message(FATAL_ERROR "moe-oracle list prints [${printed}], CMake built [${EXPECTED}]")
endif()
message(STATUS "one router list: ${printed}")
