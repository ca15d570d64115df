# OCR conformance (issue 14, docs/runtime.md "Conformance"): C programs
# written from the OCR 1.2 specification, compiled as users of the reference
# runtime compile theirs (the flags below, -Werror), each run directly and
# through `strata ocr` with every monitor backend. A run passes on its exit
# code only: ocrShutdown -> 0, ocrAbort(n) -> n, failed ocrAssert -> SIGABRT.
set(STRATA_OCR_REFERENCE_FLAGS
  -Wall -g -Werror -DOCR_TYPE_H=x86.h -DOCR_ENABLE_EDT_NAMING -DOCR_ASSERT -DENABLE_EXTENSION_AFFINITY
  -DENABLE_EXTENSION_PARAMS_EVT -DENABLE_EXTENSION_COUNTED_EVT -DENABLE_EXTENSION_CHANNEL_EVT
  -DENABLE_EXTENSION_LABELING -DENABLE_EXTENSION_LEGACY -DENABLE_EXTENSION_RTITF
  -DENABLE_EXTENSION_DB_INFO -DENABLE_EXTENSION_PAUSE)
set(STRATA_OCR_EXPECT_EXIT ${CMAKE_CURRENT_SOURCE_DIR}/ocr/conform/expect_exit.sh)

# strata_ocr_program(<target> <source>): built as a reference-runtime user builds it.
function(strata_ocr_program target source)
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE strata::ocr)
  target_compile_options(${target} PRIVATE ${STRATA_OCR_REFERENCE_FLAGS})
endfunction()

# strata_ocr_conformance(<name> [EXIT <code>|abort] [ARGS ...]): tests/ocr/conform/<name>.c
function(strata_ocr_conformance name)
  cmake_parse_arguments(C "" "EXIT" "ARGS" ${ARGN})
  if(NOT DEFINED C_EXIT)
    set(C_EXIT 0)
  endif()
  strata_ocr_program(ocr_conform_${name} ocr/conform/${name}.c)
  add_test(NAME ocr.conform.${name}
           COMMAND ${STRATA_OCR_EXPECT_EXIT} ${C_EXIT} $<TARGET_FILE:ocr_conform_${name}> ${C_ARGS})
  set_tests_properties(ocr.conform.${name} PROPERTIES LABELS integration TIMEOUT 60)
  foreach(backend off proc ebpf)
    add_test(NAME ocr.conform.${name}.through_strata_ocr_with_monitor_${backend}
             COMMAND ${STRATA_OCR_EXPECT_EXIT} ${C_EXIT} $<TARGET_FILE:strata_cli> ocr --monitor ${backend}
                     $<TARGET_FILE:ocr_conform_${name}> ${C_ARGS})
    set_tests_properties(ocr.conform.${name}.through_strata_ocr_with_monitor_${backend} PROPERTIES
      LABELS integration TIMEOUT 60)
  endforeach()
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
strata_ocr_conformance(every_hint_property_is_accepted)
strata_ocr_conformance(channel_event_honours_its_parameters)
strata_ocr_conformance(labeled_guids_name_objects_before_they_exist)
strata_ocr_conformance(legacy_program_runs_a_dag_and_waits)
strata_ocr_conformance(runtime_interface_els_workers_and_blocking)
strata_ocr_conformance(db_get_size_reports_the_created_size)
strata_ocr_conformance(pause_holds_edts_until_resume)
