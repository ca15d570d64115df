# Smoke tests: every application and variant at a tiny size, verifying its data.
strata_sw_smoke(mstream_kernels_verify_their_segments_on_every_variant NP 1 APP mstream
  ARGS --variants memory,memory-lazy,memory-create,storage,storage:sequential,storage:write_mostly,combined,combined:write_mostly,mpiio
       --size 8M --segment 1M --iters 2)
strata_sw_smoke(rma_operations_leave_the_expected_data_on_every_window_kind NP 2 APP rma
  ARGS --variants memory,memory-create,storage --sizes 256K,1M --iters 5)
# IMB-RMA's multiple and parallel transfers, and the single transfer with a rank that only waits (3 ranks).
strata_sw_smoke(rma_multiple_and_parallel_transfers_leave_the_expected_data NP 3 APP rma
  ARGS --variants memory,memory-create,storage --sizes 64K,256K --iters 3
       --ops unidir_put,bidir_put,fetch_and_op,one_put_all,one_get_all,exchange_put,exchange_get)
foreach(variant memory memory-create storage combined)
  strata_sw_smoke(dht_on_${variant}_windows_finds_every_inserted_key NP 2 APP dht
    ARGS --variant ${variant} --lv 4K)
endforeach()
# The out-of-core runs verify in passes over the LV (--verify-passes): every key must still be found.
strata_sw_smoke(dht_verification_in_passes_finds_every_key NP 2 APP dht
  ARGS --variant combined --factor 0.75 --lv 4K --verify-passes 7)
# The same DHT without strata (sw-dht-plain, issue 29): the same split, the same table as strata's windows.
add_test(NAME storage-windows.dht_on_plain_windows_holds_the_same_table_as_on_strata_windows
  COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/smoke_plain.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:sw-dht>
          $<TARGET_FILE:sw-dht-plain>)
set_tests_properties(storage-windows.dht_on_plain_windows_holds_the_same_table_as_on_strata_windows
  PROPERTIES LABELS "integration;mpi" TIMEOUT 120)
foreach(variant storage mpiio mpiio-coll)
  strata_sw_smoke(hacc_checkpoint_through_${variant}_restarts_with_every_value NP 2 APP hacc
    ARGS --variant ${variant} --particles 64K)
endforeach()
# The judged HACC variant: write_once checkpoint (written behind the program), read_once restart.
strata_sw_smoke(hacc_checkpoint_through_write_once_windows_restarts_with_every_value NP 2 APP hacc
  ARGS --variant storage --access-style write_once --restart-access-style read_once --particles 256K)
# MapReduce: a tiny corpus, every implementation; the counts must add up.
add_test(NAME storage-windows.mapreduce_word_counts_add_up_in_every_implementation
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/smoke_mapreduce.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:sw-mapreduce>)
set_tests_properties(storage-windows.mapreduce_word_counts_add_up_in_every_implementation
  PROPERTIES LABELS "integration;mpi" TIMEOUT 120)
# Crash consistency: SIGKILL of one rank mid-checkpoint (by itself, then from
# outside at a random moment); the restart resumes from the last complete checkpoint.
add_test(NAME storage-windows.crash_restart_resumes_from_the_last_complete_checkpoint
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/crash.sh ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:sw-crash>
          /var/tmp/strata-sw-crash-ctest)
set_tests_properties(storage-windows.crash_restart_resumes_from_the_last_complete_checkpoint
  PROPERTIES LABELS "integration;mpi" TIMEOUT 180)
# The harness on 2 emulated nodes (run --nodes 2 and --paper) at tiny sizes: both reports complete,
# nothing left behind. Needs root (apps/video/emulate), skipped otherwise.
add_test(NAME storage-windows.harness_on_emulated_nodes_reports_every_rank_count
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/smoke_nodes.sh $<TARGET_FILE_DIR:sw-rma>)
set_tests_properties(storage-windows.harness_on_emulated_nodes_reports_every_rank_count
  PROPERTIES LABELS "integration;mpi" TIMEOUT 600 SKIP_RETURN_CODE 77)
