# The accuracy workload: known CPU time in known functions across a parent process, a forked
# child, a thread and an exec'd program; tests/integration/test_accuracy.sh compares ciprof's
# profile with the truth it measures. Included by examples/CMakeLists.txt.
add_executable(accuracy_workload ${CMAKE_CURRENT_LIST_DIR}/accuracy_workload.c)
# Optimised but with complete frame-pointer chains, leaf functions included.
target_compile_options(accuracy_workload PRIVATE ${CIPROF_WARNINGS} -O2 -g
  -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
target_link_libraries(accuracy_workload PRIVATE Threads::Threads)
set_target_properties(accuracy_workload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples/accuracy)
