# The blocking monitor's tests (include/strata/monitor.hpp): `ctest -R '^monitor\.'`.
strata_add_test_binary(strata_monitor_unit_tests LABEL unit TIMEOUT 60 PREFIX "monitor." SOURCES
  unit/monitor_options_test.cpp
  unit/monitor_off_test.cpp)

# Real BPF (root) and real threads blocked on pipes.
# The callback test runs alone: the latency it prints is quoted in docs/monitor.md.
strata_add_test_binary(strata_monitor_integration_tests LABEL integration TIMEOUT 120 PREFIX "monitor."
  SERIAL "*runs_once_after_each_block*" SOURCES
  integration/monitor_backends_test.cpp
  integration/monitor_ebpf_test.cpp
  integration/monitor_auto_test.cpp
  integration/monitor_woken_test.cpp
  integration/monitor_wake_wait_test.cpp)
target_link_libraries(strata_monitor_integration_tests PRIVATE PkgConfig::LIBBPF)

# The UMT benchmark programs (bench/umt) on tiny inputs, with and without the monitor.
if(STRATA_BUILD_BENCH)
  add_test(NAME monitor.bench_umt.programs_compute_the_same_results_with_and_without_the_monitor
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/monitor_bench_umt_smoke.sh
                   $<TARGET_FILE_DIR:strata-umt-fwi> /var/tmp)
  set_tests_properties(monitor.bench_umt.programs_compute_the_same_results_with_and_without_the_monitor
                       PROPERTIES LABELS integration TIMEOUT 240)
endif()
# The smoke test can fail: stand-ins that print a result line and exit 3 fail it.
add_test(NAME monitor.bench_umt.smoke_test_fails_when_a_program_fails_after_its_result_line
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/monitor_bench_umt_smoke_can_fail.sh
                 ${CMAKE_CURRENT_SOURCE_DIR}/integration/monitor_bench_umt_smoke.sh /tmp)
set_tests_properties(monitor.bench_umt.smoke_test_fails_when_a_program_fails_after_its_result_line
                     PROPERTIES LABELS unit TIMEOUT 60)
