# OCR conformance (issue 14, docs/runtime.md "Conformance"): C programs
# written from the OCR 1.2 specification, compiled as users of the reference
# runtime compile theirs (the flags below, -Werror), each run directly and
# through `strata ocr` with every monitor backend. A run passes on its exit
# code only: ocrShutdown -> 0, ocrAbort(n) -> n, failed ocrAssert -> SIGABRT.
set(STRATA_OCR_REFERENCE_FLAGS
  -Wall -g -Werror -DOCR_TYPE_H=x86.h -DOCR_ENABLE_EDT_NAMING -DOCR_ASSERT -DENABLE_EXTENSION_AFFINITY
  -DENABLE_EXTENSION_PARAMS_EVT -DENABLE_EXTENSION_COUNTED_EVT -DENABLE_EXTENSION_CHANNEL_EVT
  -DENABLE_EXTENSION_LABELING -DENABLE_EXTENSION_LEGACY -DENABLE_EXTENSION_RTITF
  -DENABLE_EXTENSION_DB_INFO -DENABLE_EXTENSION_PAUSE -DENABLE_EXTENSION_COLLECTIVE_EVT
  -DENABLE_EXTENSION_MULTI_OUTPUT_SLOT)
set(STRATA_OCR_EXPECT_EXIT ${CMAKE_CURRENT_SOURCE_DIR}/ocr/conform/expect_exit.sh)

# strata_ocr_program(<target> <source>): built as a reference-runtime user builds it.
function(strata_ocr_program target source)
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE strata::ocr)
  target_compile_options(${target} PRIVATE ${STRATA_OCR_REFERENCE_FLAGS})
endfunction()

# strata_ocr_conformance(<name> [EXIT <code>|abort] [ARGS ...] [ENV VAR=value...]): tests/ocr/conform/<name>.c
function(strata_ocr_conformance name)
  cmake_parse_arguments(C "" "EXIT" "ARGS;ENV" ${ARGN})
  if(NOT DEFINED C_EXIT)
    set(C_EXIT 0)
  endif()
  strata_ocr_program(ocr_conform_${name} ocr/conform/${name}.c)
  add_test(NAME ocr.conform.${name}
           COMMAND ${STRATA_OCR_EXPECT_EXIT} ${C_EXIT} $<TARGET_FILE:ocr_conform_${name}> ${C_ARGS})
  set_tests_properties(ocr.conform.${name} PROPERTIES LABELS integration TIMEOUT 60 ENVIRONMENT "${C_ENV}")
  foreach(backend off proc ebpf)
    add_test(NAME ocr.conform.${name}.through_strata_ocr_with_monitor_${backend}
             COMMAND ${STRATA_OCR_EXPECT_EXIT} ${C_EXIT} $<TARGET_FILE:strata_cli> ocr --monitor ${backend}
                     $<TARGET_FILE:ocr_conform_${name}> ${C_ARGS})
    set_tests_properties(ocr.conform.${name}.through_strata_ocr_with_monitor_${backend} PROPERTIES
      LABELS integration TIMEOUT 60 ENVIRONMENT "${C_ENV}")
  endforeach()
endfunction()

# strata_ocr_check(<name> <command...>): one more run of a conformance program.
function(strata_ocr_check name)
  add_test(NAME ocr.conform.${name} COMMAND ${ARGN})
  set_tests_properties(ocr.conform.${name} PROPERTIES LABELS integration TIMEOUT 60)
endfunction()

strata_ocr_conformance(arguments_reach_the_program_untouched
  ARGS --ds 100 --stats --monitor off -- -h "x y")
# strata's options end at `--` too, which is then dropped.
add_test(NAME ocr.conform.arguments_after_a_double_dash_reach_the_program_untouched
         COMMAND ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:strata_cli> ocr --stats --monitor off --
                 $<TARGET_FILE:ocr_conform_arguments_reach_the_program_untouched>
                 --ds 100 --stats --monitor off -- -h "x y")
add_test(NAME ocr.conform.a_reordered_argument_list_is_seen_by_the_program
         COMMAND ${STRATA_OCR_EXPECT_EXIT} 4 $<TARGET_FILE:strata_cli> ocr
                 $<TARGET_FILE:ocr_conform_arguments_reach_the_program_untouched>
                 100 --ds --stats --monitor off -- -h "x y")
set_tests_properties(ocr.conform.arguments_after_a_double_dash_reach_the_program_untouched
  ocr.conform.a_reordered_argument_list_is_seen_by_the_program PROPERTIES LABELS integration TIMEOUT 60)

strata_ocr_conformance(reference_header_surface_builds)
strata_ocr_conformance(shutdown_exits_zero)
strata_ocr_conformance(abort_code_is_the_exit_code EXIT 42)
strata_ocr_conformance(failed_ocr_assert_aborts EXIT abort)
strata_ocr_conformance(event_types_follow_their_rules)
strata_ocr_conformance(edt_returning_an_event_chains_its_output_event)
strata_ocr_conformance(finish_edt_output_event_carries_its_return_value)
strata_ocr_conformance(db_mode_null_gives_null_guid_and_pointer)
strata_ocr_conformance(edt_create_rejects_count_mismatches)
strata_ocr_conformance(edt_create_failing_on_a_dependence_leaves_nothing_behind)
strata_ocr_conformance(every_hint_property_is_accepted)
strata_ocr_conformance(channel_event_honours_its_parameters)
strata_ocr_conformance(labeled_guids_name_objects_before_they_exist)
strata_ocr_conformance(legacy_program_runs_a_dag_and_waits)
strata_ocr_conformance(runtime_interface_els_workers_and_blocking)
strata_ocr_conformance(db_get_size_reports_the_created_size)
strata_ocr_conformance(pause_holds_edts_until_resume)
strata_ocr_conformance(collective_event_reduces_each_generation)

# Real OCR applications (issue 26). The public headers bring in only what the
# reference's do: a program may name locals like any other libc macro
# (header_hygiene.cmake); the control run, with <errno.h> included first,
# must fail.
foreach(control OFF ON)
  if(control)
    set(name ocr.conform.header_hygiene_check_fails_when_errno_h_is_included)
  else()
    set(name ocr.conform.public_headers_leave_every_other_libc_macro_name_to_the_program)
  endif()
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DINCLUDE=${CMAKE_SOURCE_DIR}/include/ocr
                   "-DFLAGS=${STRATA_OCR_REFERENCE_FLAGS}" -DWORK=${CMAKE_CURRENT_BINARY_DIR}/header_hygiene_${control}
                   -DCONTROL=${control} -P ${CMAKE_CURRENT_SOURCE_DIR}/ocr/conform/header_hygiene.cmake)
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 120 WILL_FAIL ${control})
endforeach()
strata_ocr_conformance(every_reference_header_name_has_the_reference_form)
strata_ocr_conformance(main_edt_in_the_program_s_own_form)
strata_ocr_conformance(priority_hints_order_ready_edts ENV STRATA_WORKERS=1)

# The worker count: STRATA_WORKERS (`strata ocr --workers`), the reference's
# configuration file (`-ocr:cfg FILE` among the program's arguments, or
# OCR_CONFIG), more workers than cores; each run spinning and blocking.
set(STRATA_OCR_EXPECT_ERROR ${CMAKE_CURRENT_SOURCE_DIR}/ocr/conform/expect_error.sh)
set(configs ${CMAKE_CURRENT_SOURCE_DIR}/ocr/conform/configs)
set(program ocr_conform_every_worker_runs_an_edt_at_once)
strata_ocr_conformance(every_worker_runs_an_edt_at_once ARGS 5 spin ENV STRATA_WORKERS=5)
foreach(wait spin block)
  strata_ocr_check(five_workers_on_fewer_cores_from_strata_ocr_workers_run_five_edts_at_once.${wait}
    ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:strata_cli> ocr --workers 5 $<TARGET_FILE:${program}> 5 ${wait})
  strata_ocr_check(the_reference_ocr_cfg_argument_sets_four_workers.${wait}
    ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:${program}> -ocr:cfg ${configs}/four_workers.cfg 4 ${wait})
  strata_ocr_check(the_reference_ocr_config_variable_sets_four_workers.${wait}
    ${CMAKE_COMMAND} -E env OCR_CONFIG=${configs}/four_workers.cfg
    ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:${program}> 4 ${wait})
  foreach(backend proc ebpf)
    strata_ocr_check(seven_workers_with_monitor_${backend}_run_seven_edts_at_once.${wait}
      ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:strata_cli> ocr --workers 7 --monitor ${backend}
      $<TARGET_FILE:${program}> 7 ${wait})
  endforeach()
endforeach()
strata_ocr_check(strata_workers_wins_over_the_configuration_file
  ${CMAKE_COMMAND} -E env STRATA_WORKERS=3 OCR_CONFIG=${configs}/four_workers.cfg
  ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:${program}> 3 spin)
# The check can fail: a count other than the one set is reported (exit 4).
strata_ocr_check(a_worker_count_other_than_the_one_set_is_reported
  ${STRATA_OCR_EXPECT_EXIT} 4 $<TARGET_FILE:strata_cli> ocr --workers 2 $<TARGET_FILE:${program}> 3 spin)
strata_ocr_check(a_missing_configuration_file_is_named_in_the_error
  ${STRATA_OCR_EXPECT_ERROR} 2 "-ocr:cfg=${configs}/missing.cfg: cannot read it"
  $<TARGET_FILE:${program}> -ocr:cfg ${configs}/missing.cfg 1 spin)
strata_ocr_check(a_configuration_without_workers_is_refused_naming_the_file
  ${STRATA_OCR_EXPECT_ERROR} 2 "OCR_CONFIG=${configs}/no_workers.cfg: no .WorkerInst"
  ${CMAKE_COMMAND} -E env OCR_CONFIG=${configs}/no_workers.cfg $<TARGET_FILE:${program}> 1 spin)
strata_ocr_check(a_backwards_worker_range_is_refused_naming_the_line
  ${STRATA_OCR_EXPECT_ERROR} 2 "backwards_range.cfg:3: id = 3-1"
  $<TARGET_FILE:${program}> -ocr:cfg ${configs}/backwards_range.cfg 1 spin)
strata_ocr_check(ocr_cfg_without_a_file_is_refused
  ${STRATA_OCR_EXPECT_ERROR} 2 "-ocr:cfg: missing the configuration file"
  $<TARGET_FILE:${program}> -ocr:cfg)
strata_ocr_check(a_bad_strata_workers_value_is_named_in_the_error
  ${CMAKE_COMMAND} -E env STRATA_WORKERS=many
  ${STRATA_OCR_EXPECT_ERROR} 2 "STRATA_WORKERS=many"
  $<TARGET_FILE:${program}> 1 spin)

# Example OCR applications with known results (tests/ocr/apps/), built with the
# same flags, run directly and through `strata ocr` with each monitor. Cholesky
# and FFT are checked against numpy, Smith-Waterman against a Python dynamic
# program (tests/ocr/apps/check.py); N-Queens and the reduction tree against
# known values.
set(STRATA_OCR_APP_CHECK ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/ocr/apps/check.py)
foreach(app cholesky nqueens smith_waterman reduction_tree fft)
  strata_ocr_program(ocr_app_${app} ocr/apps/${app}.c)
  target_link_libraries(ocr_app_${app} PRIVATE m)
endforeach()

# strata_ocr_app_test(<name> <app target> <command before the program> <after>...)
function(strata_ocr_app_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 120)
endfunction()

set(runners direct)
foreach(backend off proc ebpf)
  list(APPEND runners ${backend})
endforeach()
foreach(runner ${runners})
  if(runner STREQUAL direct)
    set(prefix "")
    set(suffix "")
  else()
    set(prefix $<TARGET_FILE:strata_cli> ocr --monitor ${runner})
    set(suffix .through_strata_ocr_with_monitor_${runner})
  endif()
  strata_ocr_app_test(ocr.apps.tiled_cholesky_matches_numpy${suffix}
    ${STRATA_OCR_APP_CHECK} cholesky --n 96 --tile 24 -- ${prefix} $<TARGET_FILE:ocr_app_cholesky>)
  strata_ocr_app_test(ocr.apps.fft_matches_numpy${suffix}
    ${STRATA_OCR_APP_CHECK} fft --n 1024 -- ${prefix} $<TARGET_FILE:ocr_app_fft>)
  strata_ocr_app_test(ocr.apps.smith_waterman_score_matches_a_serial_dynamic_program${suffix}
    ${STRATA_OCR_APP_CHECK} smith-waterman --length 300 --tile 32 -- ${prefix} $<TARGET_FILE:ocr_app_smith_waterman>)
  strata_ocr_app_test(ocr.apps.nqueens_of_9_has_352_solutions${suffix}
    ${STRATA_OCR_EXPECT_EXIT} 0 ${prefix} $<TARGET_FILE:ocr_app_nqueens> 9 352 3)
  strata_ocr_app_test(ocr.apps.reduction_tree_sums_1_to_10000${suffix}
    ${STRATA_OCR_EXPECT_EXIT} 0 ${prefix} $<TARGET_FILE:ocr_app_reduction_tree> 10000 4 50005000)
endforeach()
# The checks can fail: a wrong expected count is reported by the exit code.
strata_ocr_app_test(ocr.apps.nqueens_with_a_wrong_expected_count_exits_1
  ${STRATA_OCR_EXPECT_EXIT} 1 $<TARGET_FILE:ocr_app_nqueens> 8 93 2)
strata_ocr_app_test(ocr.apps.nqueens_of_8_has_92_solutions_without_spawning
  ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:ocr_app_nqueens> 8 92 0)

# Normal and external tasks in one DAG (tests/ocr/apps/external_dag.c, docs/external.md):
# directly with STRATA_EXTERNAL_CONFIG and through `strata ocr --external-config`,
# with each exposure; the program checks its results against known values.
strata_ocr_program(ocr_app_external_dag ocr/apps/external_dag.c)
set(STRATA_EXTERNAL_DAG_CONFIG ${CMAKE_CURRENT_SOURCE_DIR}/ocr/apps/external_dag.toml)
foreach(exposure memfd fuse)
  strata_ocr_app_test(ocr.apps.external_dag_of_normal_and_external_tasks_gives_known_results.${exposure}
    ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:ocr_app_external_dag> 1000)
  set_property(TEST ocr.apps.external_dag_of_normal_and_external_tasks_gives_known_results.${exposure}
    PROPERTY ENVIRONMENT STRATA_EXTERNAL_CONFIG=${STRATA_EXTERNAL_DAG_CONFIG} STRATA_EXTERNAL_EXPOSURE=${exposure})
  strata_ocr_app_test(ocr.apps.external_dag_through_strata_ocr_external_config.${exposure}
    ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:strata_cli> ocr --external-config ${STRATA_EXTERNAL_DAG_CONFIG}
    --external-exposure ${exposure} $<TARGET_FILE:ocr_app_external_dag> 1000)
endforeach()
# The check can fail: without a configuration the templates are refused (ocrAbort(2)).
strata_ocr_app_test(ocr.apps.external_dag_without_a_configuration_exits_2
  ${STRATA_OCR_EXPECT_EXIT} 2 $<TARGET_FILE:ocr_app_external_dag> 1000)
set_property(TEST ocr.apps.external_dag_without_a_configuration_exits_2
  PROPERTY ENVIRONMENT_MODIFICATION STRATA_EXTERNAL_CONFIG=unset:)
