# The runtime layer's tests (docs/runtime.md): scheduler and OCR semantics
# (unit, run under TSan in scripts/test), and small OCR programs in C run
# directly and through `strata ocr` (integration).
strata_add_test_binary(strata_runtime_unit_tests LABEL unit TIMEOUT 60 PREFIX "runtime." SOURCES
  unit/runtime_scheduler_test.cpp
  unit/runtime_workers_test.cpp
  unit/runtime_idle_poller_test.cpp
  unit/runtime_io_priority_test.cpp
  unit/runtime_ocr_event_test.cpp
  unit/runtime_ocr_edt_test.cpp
  unit/runtime_ocr_db_test.cpp
  unit/runtime_ocr_db_dir_test.cpp
  unit/runtime_ocr_program_test.cpp
  unit/runtime_ownership_test.cpp)
target_link_libraries(strata_runtime_unit_tests PRIVATE strata::runtime)
target_include_directories(strata_runtime_unit_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)  # runtime/ownership.hpp

# OCR programs: built against include/ocr, linked with -lstrata-ocr only.
function(strata_add_ocr_program name)
  cmake_parse_arguments(ARG "" "" "RUNS" ${ARGN})
  add_executable(ocr_${name} ocr/${name}.c)
  target_link_libraries(ocr_${name} PRIVATE strata::ocr)
  target_compile_options(ocr_${name} PRIVATE -Wall -Wextra -Werror)
endfunction()

# Each run passes on its exit status and on exact whole lines of its output
# (tests/support/expect_output.sh): the count of wrong points must be exactly 0.
set(STRATA_EXPECT_OUTPUT ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh)
set(stencil_line "stencil: [0-9]+ blocks x [0-9]+ points, [0-9]+ iterations: checksum [0-9.]+, 0 points differ from the serial result")

strata_add_ocr_program(fibonacci)
add_test(NAME runtime.ocr.fibonacci_of_20_is_6765
         COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "fib\\(20\\) = 6765 \\(expected 6765\\)" -- $<TARGET_FILE:ocr_fibonacci> 20)
set_tests_properties(runtime.ocr.fibonacci_of_20_is_6765 PROPERTIES LABELS integration TIMEOUT 60)

strata_add_ocr_program(stencil)
# A shared data block handed to a Python process by handle (tests/python/test_python_ocr_handle.py).
strata_add_ocr_program(shared_block)
add_test(NAME runtime.ocr.stencil_matches_the_serial_result
         COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "${stencil_line}" -- $<TARGET_FILE:ocr_stencil> 8 64 40)
set_tests_properties(runtime.ocr.stencil_matches_the_serial_result PROPERTIES LABELS integration TIMEOUT 60)

# The same programs through `strata ocr`, with each monitor backend named explicitly.
add_test(NAME runtime.ocr.fibonacci_through_strata_ocr
         COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "fib\\(18\\) = 2584 \\(expected 2584\\)" "strata runtime statistics \\(monitor .*\\)"
                 -- $<TARGET_FILE:strata_cli> ocr --stats ./bin/ocr_fibonacci 18
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(runtime.ocr.fibonacci_through_strata_ocr PROPERTIES LABELS integration TIMEOUT 60)
foreach(backend off proc ebpf)
  add_test(NAME runtime.ocr.stencil_through_strata_ocr_with_monitor_${backend}
           COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "${stencil_line}" "strata runtime statistics \\(monitor ${backend}: .*\\)"
                   -- $<TARGET_FILE:strata_cli> ocr --monitor ${backend} --stats $<TARGET_FILE:ocr_stencil> 8 256 60)
  set_tests_properties(runtime.ocr.stencil_through_strata_ocr_with_monitor_${backend} PROPERTIES
    LABELS integration TIMEOUT 60)
endforeach()
# The checks can fail: a right line with a wrong exit status, and "10 points differ".
add_test(NAME runtime.ocr.expect_output_fails_on_a_wrong_count_or_exit_status
         COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output_can_fail.sh ${STRATA_EXPECT_OUTPUT})
set_tests_properties(runtime.ocr.expect_output_fails_on_a_wrong_count_or_exit_status PROPERTIES
  LABELS unit TIMEOUT 30)
add_test(NAME runtime.ocr.strata_ocr_names_a_missing_program COMMAND strata_cli ocr ./no-such-ocr-program)
set_tests_properties(runtime.ocr.strata_ocr_names_a_missing_program PROPERTIES
  LABELS integration TIMEOUT 30 WILL_FAIL TRUE)

# The runtime with the real blocking monitor (BPF needs privilege: a failure under CI=true).
# The block-to-next-task test and the cover priority tests run alone: they pin workers to
# one CPU and print latencies measured there.
strata_add_test_binary(strata_runtime_integration_tests LABEL integration TIMEOUT 120 PREFIX "runtime."
  SERIAL "*a_task_queued_behind_a_blocked_one*:*RuntimeCoverPriority*:*RuntimeCoverSurrender*:*RuntimeCoverSuspend*:*RuntimeStandby*:*RuntimeAutoCover*:*RuntimeLeader*:*RuntimeCoverSwap*" SOURCES
  integration/runtime_monitor_test.cpp
  integration/runtime_surrender_test.cpp
  integration/runtime_suspend_test.cpp
  integration/runtime_standby_test.cpp
  integration/runtime_auto_cover_test.cpp
  integration/runtime_cover_swap_test.cpp)
target_link_libraries(strata_runtime_integration_tests PRIVATE strata::runtime)

# Data blocks as shared objects and their checkpoints (docs/runtime.md): real
# segments loaded by forked processes, real files.
strata_add_test_binary(strata_runtime_ocr_blocks_tests LABEL integration TIMEOUT 120 PREFIX "runtime." SOURCES
  integration/runtime_ocr_shared_db_test.cpp
  integration/runtime_ocr_db_checkpoint_test.cpp)
target_link_libraries(strata_runtime_ocr_blocks_tests PRIVATE strata::runtime)

strata_add_ocr_program(latch_reduce)
add_test(NAME runtime.ocr.latch_reduce_sums_under_ew_without_lost_updates
         COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "latch_reduce: 500 EDTs in EW mode summed to 124750 \\(expected 124750\\)"
                 -- $<TARGET_FILE:ocr_latch_reduce> 500)
set_tests_properties(runtime.ocr.latch_reduce_sums_under_ew_without_lost_updates PROPERTIES
  LABELS integration TIMEOUT 60)
add_test(NAME runtime.ocr.latch_reduce_through_strata_ocr_with_storage_blocks
         COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 0 "latch_reduce: 200 EDTs in EW mode summed to 19900 \\(expected 19900\\)"
                 -- $<TARGET_FILE:strata_cli> ocr --db-placement storage --db-dir ${CMAKE_BINARY_DIR}
                    $<TARGET_FILE:ocr_latch_reduce> 200)
set_tests_properties(runtime.ocr.latch_reduce_through_strata_ocr_with_storage_blocks PROPERTIES
  LABELS integration TIMEOUT 60)
