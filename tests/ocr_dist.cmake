# Distributed OCR (docs/runtime.md, "Distributed OCR"): the programs of
# tests/ocr/dist/programs.txt, one behaviour each, built as the conformance
# programs are (ocr_conform.cmake), each run on 1, 2 and 4 ranks through
# `strata ocr -n N` (mpiexec). A run passes on its exit code alone.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/ocr/dist/programs.txt _strata_ocr_dist_lines REGEX "^[a-z]")
foreach(line IN LISTS _strata_ocr_dist_lines)
  string(REPLACE " " ";" fields "${line}")
  list(POP_FRONT fields name code)
  strata_ocr_program(ocr_dist_${name} ocr/dist/${name}.c)
  target_include_directories(ocr_dist_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/ocr/dist)
  foreach(ranks 1 2 4)
    add_test(NAME ocr.dist.${name}.on_${ranks}_ranks
             COMMAND ${STRATA_OCR_EXPECT_EXIT} ${code} $<TARGET_FILE:strata_cli> ocr -n ${ranks}
                     $<TARGET_FILE:ocr_dist_${name}> ${fields})
    # Four ranks on a 2-core machine: ctest runs no other test beside them.
    set(cores ${ranks})
    if(cores GREATER 2)
      set(cores 2)
    endif()
    set_tests_properties(ocr.dist.${name}.on_${ranks}_ranks PROPERTIES
      LABELS "integration;mpi" TIMEOUT 60 PROCESSORS ${cores})
  endforeach()
endforeach()

# STRATA_OCR_COMM_BATCH (docs/runtime.md): 0 keeps the communication thread at the normal policy; a
# value other than 0 or 1 fails the start, naming it.
add_test(NAME ocr.dist.with_comm_batch_off_the_communication_thread_keeps_the_normal_policy
  COMMAND ${CMAKE_COMMAND} -E env STRATA_OCR_COMM_BATCH=0 ${STRATA_OCR_EXPECT_EXIT} 0 $<TARGET_FILE:strata_cli>
          ocr -n 2 $<TARGET_FILE:ocr_dist_the_communication_thread_runs_at_sched_batch> other)
add_test(NAME ocr.dist.a_bad_comm_batch_switch_fails_the_start_naming_it
  COMMAND /bin/sh -c "out=$(STRATA_OCR_COMM_BATCH=yes \"$0\" ocr -n 2 \"$1\" 2>&1); rc=$?; echo \"$out\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q 'STRATA_OCR_COMM_BATCH=yes: not 0 or 1'"
          $<TARGET_FILE:strata_cli> $<TARGET_FILE:ocr_dist_the_communication_thread_runs_at_sched_batch>)
set_tests_properties(ocr.dist.with_comm_batch_off_the_communication_thread_keeps_the_normal_policy
  ocr.dist.a_bad_comm_batch_switch_fails_the_start_naming_it PROPERTIES LABELS "integration;mpi" TIMEOUT 60 PROCESSORS 2)

# Errors across ranks: the message names the object, its rank and the call
# site, and every rank ends with exit code 1 (with one rank the call itself
# returns the code, so these run on 2 and 4 ranks).
set(STRATA_OCR_DIST_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/ocr/dist)
strata_ocr_program(ocr_dist_a_satisfaction_of_a_destroyed_event_of_another_rank_is_named
  ocr/dist/a_satisfaction_of_a_destroyed_event_of_another_rank_is_named.c)
target_include_directories(ocr_dist_a_satisfaction_of_a_destroyed_event_of_another_rank_is_named PRIVATE
  ${STRATA_OCR_DIST_SOURCE})
foreach(ranks 2 4)
  add_test(NAME ocr.dist.a_satisfaction_of_a_destroyed_event_of_another_rank_is_named.on_${ranks}_ranks
    COMMAND /bin/sh ${STRATA_EXPECT_OUTPUT} 1
      "strata-ocr: .*a_satisfaction_of_a_destroyed_event_of_another_rank_is_named.c:[0-9]+: ocrEventSatisfy: OCR_EINVAL: event 0x[0-9a-f]+ \\(of rank 0\\) is not a live event"
      -- $<TARGET_FILE:strata_cli> ocr -n ${ranks}
         $<TARGET_FILE:ocr_dist_a_satisfaction_of_a_destroyed_event_of_another_rank_is_named>)
  set_tests_properties(ocr.dist.a_satisfaction_of_a_destroyed_event_of_another_rank_is_named.on_${ranks}_ranks
    PROPERTIES LABELS "integration;mpi" TIMEOUT 60 PROCESSORS 2)
endforeach()

# The workload the failure tests kill a rank of (tests/python/test_ocr_dist_failures.py).
strata_ocr_program(ocr_dist_keeps_every_rank_busy ocr/dist/keeps_every_rank_busy.c)
target_include_directories(ocr_dist_keeps_every_rank_busy PRIVATE ${STRATA_OCR_DIST_SOURCE})

# The distributed examples (tests/ocr/dist/apps), checked against serial references on 1, 2
# and 4 ranks: the 2-D stencil (tiles placed by affinity) and the distributed Cholesky against
# numpy (tests/ocr/apps/check.py), the reduction over all ranks against a serial loop and the
# closed form.
foreach(app stencil cholesky reduction)
  strata_ocr_program(ocr_dist_app_${app} ocr/dist/apps/${app}.c)
  target_include_directories(ocr_dist_app_${app} PRIVATE ${STRATA_OCR_DIST_SOURCE} ${STRATA_OCR_DIST_SOURCE}/apps)
  target_link_libraries(ocr_dist_app_${app} PRIVATE m)
endforeach()
foreach(ranks 1 2 4)
  set(run $<TARGET_FILE:strata_cli> ocr -n ${ranks})
  add_test(NAME ocr.dist.apps.a_stencil_of_tiles_placed_by_affinity_matches_numpy.on_${ranks}_ranks
    COMMAND ${STRATA_OCR_APP_CHECK} stencil --n 96 --q 4 --steps 12 -- ${run} $<TARGET_FILE:ocr_dist_app_stencil>)
  add_test(NAME ocr.dist.apps.the_distributed_cholesky_matches_numpy.on_${ranks}_ranks
    COMMAND ${STRATA_OCR_APP_CHECK} cholesky --n 96 --tile 24 -- ${run} $<TARGET_FILE:ocr_dist_app_cholesky>)
  add_test(NAME ocr.dist.apps.a_reduction_over_all_ranks_matches_a_serial_loop.on_${ranks}_ranks
    COMMAND ${STRATA_OCR_EXPECT_EXIT} 0 ${run} $<TARGET_FILE:ocr_dist_app_reduction> 2000 4)
  set(cores ${ranks})
  if(cores GREATER 2)
    set(cores 2)
  endif()
  foreach(test a_stencil_of_tiles_placed_by_affinity_matches_numpy the_distributed_cholesky_matches_numpy
               a_reduction_over_all_ranks_matches_a_serial_loop)
    set_tests_properties(ocr.dist.apps.${test}.on_${ranks}_ranks PROPERTIES
      LABELS "integration;mpi" TIMEOUT 120 PROCESSORS ${cores})
  endforeach()
endforeach()
