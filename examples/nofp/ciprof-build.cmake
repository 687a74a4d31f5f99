# The no-frame-pointer workload: a deep call chain built with -O2 -fomit-frame-pointer, as
# Debian's own libraries are, so frame-pointer call chains lose the callers of its functions
# and only --unwind dwarf recovers them (tests/integration/test_unwind_dwarf.sh). Included by
# examples/CMakeLists.txt.
add_executable(nofp_workload ${CMAKE_CURRENT_LIST_DIR}/nofp_workload.c)
# The -fomit-frame-pointer here comes after ciprof's global -fno-omit-frame-pointer and wins.
target_compile_options(nofp_workload PRIVATE ${CIPROF_WARNINGS} -O2 -g -fomit-frame-pointer
  -momit-leaf-frame-pointer)
set_target_properties(nofp_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples/nofp)
