# Distributed shared memory (docs/dsm.md): ctest names start with "dsm.".
# The protocol tables and the randomized explorer run in-process (label unit).
strata_add_test_binary(strata_dsm_unit_tests LABEL unit TIMEOUT 120 PREFIX "dsm." SOURCES
  unit/dsm_protocol_table_test.cpp
  unit/dsm_protocol_sequences_test.cpp
  unit/dsm_explorer_test.cpp
  unit/dsm_direct_path_test.cpp
  unit/dsm_protocol_doc_test.cpp
  unit/dsm_wire_test.cpp
  unit/dsm_admission_test.cpp)
target_link_libraries(strata_dsm_unit_tests PRIVATE strata_dsm_protocol strata::dsm)
target_compile_definitions(strata_dsm_unit_tests PRIVATE STRATA_DSM_DOC="${CMAKE_SOURCE_DIR}/docs/dsm.md")

# The transport's buffer pool (src/net/buffer_pool.hpp), in-process.
strata_add_test_binary(strata_net_unit_tests LABEL unit TIMEOUT 60 PREFIX "net." SOURCES unit/net_buffer_pool_test.cpp)
target_link_libraries(strata_net_unit_tests PRIVATE strata_net_mpi)

# MPI programs (label mpi): real processes through libstrata-dsm, with mpiexec.
function(strata_dsm_mpi_program name)
  add_executable(${name} mpi_dsm/${name}.cpp)
  target_link_libraries(${name} PRIVATE strata::dsm MPI::MPI_CXX fmt::fmt strata_warnings)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm)
endfunction()

# strata_dsm_mpi_test(<ctest name> PROGRAM <p> NP <n> ARGS ...)
function(strata_dsm_mpi_test name)
  cmake_parse_arguments(ARG "" "PROGRAM;NP" "ARGS" ${ARGN})
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:${ARG_PROGRAM}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT 180)
endfunction()

strata_dsm_mpi_program(dsm_coherence_test)
strata_dsm_mpi_test(dsm.mpi.racing_clients_with_one_server_read_every_released_write PROGRAM dsm_coherence_test NP 5 ARGS 1 400)
strata_dsm_mpi_test(dsm.mpi.racing_clients_with_four_servers_read_every_released_write PROGRAM dsm_coherence_test NP 8 ARGS 4 300)
# Where a release's bytes travel: from the writer to the update-subscribers (direct data path),
# or through the home (off); the channel's counters say which.
strata_dsm_mpi_program(dsm_data_path_test)
# Same-node data (Options::node_sharing): by reference on one node, never across nodes.
strata_dsm_mpi_test(dsm.mpi.update_on_write_data_goes_from_the_writer_to_the_subscriber_not_through_the_home
  PROGRAM dsm_data_path_test NP 4 ARGS direct on)
strata_dsm_mpi_test(dsm.mpi.with_the_direct_path_off_every_release_passes_through_the_home
  PROGRAM dsm_data_path_test NP 4 ARGS relay on)
strata_dsm_mpi_test(dsm.mpi.with_node_sharing_off_every_byte_goes_through_mpi
  PROGRAM dsm_data_path_test NP 4 ARGS direct off)
strata_dsm_mpi_test(dsm.mpi.ranks_of_different_nodes_never_hand_data_over_by_reference
  PROGRAM dsm_data_path_test NP 4 ARGS direct split)
strata_dsm_mpi_test(dsm.mpi.a_relaying_home_hands_data_by_reference_only_to_its_own_node
  PROGRAM dsm_data_path_test NP 4 ARGS relay split)
strata_dsm_mpi_program(dsm_failure_test)
foreach(mode client server)
  add_test(NAME dsm.mpi.a_sigkilled_${mode}_gives_survivors_errors_not_a_hang
    COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_failure_test.sh
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_failure_test> ${mode})
  set_tests_properties(dsm.mpi.a_sigkilled_${mode}_gives_survivors_errors_not_a_hang PROPERTIES LABELS "integration;mpi" TIMEOUT 120)
endforeach()
# The direct data path: a dead update subscriber's writer is recalled, its next grant names the living.
add_test(NAME dsm.mpi.a_sigkilled_update_subscriber_leaves_its_writers_direct_grant
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_failure_test.sh
          ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_failure_test> subscriber)
set_tests_properties(dsm.mpi.a_sigkilled_update_subscriber_leaves_its_writers_direct_grant PROPERTIES
  LABELS "integration;mpi" TIMEOUT 120)
# The same subscriber of a 2 MiB chunk, its releases by reference: it dies holding one in place.
add_test(NAME dsm.mpi.a_subscriber_killed_holding_a_release_in_place_leaves_the_writer_going
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_failure_test.sh
          ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_failure_test> subscriber-in-place)
set_tests_properties(dsm.mpi.a_subscriber_killed_holding_a_release_in_place_leaves_the_writer_going PROPERTIES
  LABELS "integration;mpi" TIMEOUT 120)
# A client that stops answering (SIGSTOP, as behind a cut link): the client that meets the end of
# the first one to report it still names the silent one (the dead notice), not the one that ended.
add_test(NAME dsm.mpi.a_survivor_names_the_silent_client_not_the_survivor_that_ended_first
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_failure_test.sh
          ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_failure_test> silent)
set_tests_properties(dsm.mpi.a_survivor_names_the_silent_client_not_the_survivor_that_ended_first PROPERTIES
  LABELS "integration;mpi" TIMEOUT 120)
strata_dsm_mpi_program(dsm_lock_test)
strata_dsm_mpi_test(dsm.mpi.four_clients_contending_for_a_lock_never_overlap_and_count_exactly
  PROGRAM dsm_lock_test NP 5 ARGS contention 1 150)
strata_dsm_mpi_test(dsm.mpi.four_clients_contending_for_locks_on_two_servers_count_exactly
  PROGRAM dsm_lock_test NP 6 ARGS contention 2 100)
strata_dsm_mpi_test(dsm.mpi.unlock_without_holding_the_lock_fails_naming_it_and_changes_nothing
  PROGRAM dsm_lock_test NP 3 ARGS misuse)
add_test(NAME dsm.mpi.a_sigkilled_lock_holder_gives_every_waiter_broken_not_a_hang
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_lock_test.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_lock_test>)
set_tests_properties(dsm.mpi.a_sigkilled_lock_holder_gives_every_waiter_broken_not_a_hang PROPERTIES
  LABELS "integration;mpi" TIMEOUT 120)
# The super-peer topology (Options::topology): every rank's event log shows each client's requests
# going to its super-peer only, passed on between servers, and the load spread over the 4 servers;
# the direct run is the control that the checks tell the topologies apart.
strata_dsm_mpi_program(dsm_topology_test)
foreach(mode super-peer direct)
  set(name dsm.mpi.clients_send_every_request_to_their_super_peer_and_four_servers_share_the_load)
  if(mode STREQUAL direct)
    set(name dsm.mpi.without_super_peers_clients_send_requests_to_several_servers)
  endif()
  add_test(NAME ${name}
    COMMAND /bin/sh -c "d=$(mktemp -d \"\${TMPDIR:-/tmp}/strata-dsm-topology-XXXXXX\") && \"$0\" -n 8 \"$1\" \"$d\" $2; rc=$?; rm -rf \"$d\"; exit $rc"
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_topology_test> ${mode})
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT 180)
endforeach()
# The protocol, lock and failure tests again through super-peers ($STRATA_DSM_TOPOLOGY, which
# mpiexec passes to every rank): forwarding keeps each client's requests in order, and a dead
# super-peer or home still gives the survivors errors, not a hang.
strata_dsm_mpi_test(dsm.mpi.racing_clients_through_super_peers_read_every_released_write
  PROGRAM dsm_coherence_test NP 8 ARGS 4 300)
strata_dsm_mpi_test(dsm.mpi.clients_contending_for_locks_through_super_peers_count_exactly
  PROGRAM dsm_lock_test NP 6 ARGS contention 2 100)
strata_dsm_mpi_test(dsm.example.a_stencil_through_super_peers_matches_the_serial_stencil
  PROGRAM dsm_stencil NP 7 ARGS 4 256 20)
foreach(mode client server)
  add_test(NAME dsm.mpi.a_sigkilled_${mode}_under_super_peers_gives_survivors_errors_not_a_hang
    COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_failure_test.sh
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_failure_test> ${mode})
  set_tests_properties(dsm.mpi.a_sigkilled_${mode}_under_super_peers_gives_survivors_errors_not_a_hang PROPERTIES
    LABELS "integration;mpi" TIMEOUT 120)
endforeach()
set_tests_properties(dsm.mpi.racing_clients_through_super_peers_read_every_released_write
  dsm.mpi.clients_contending_for_locks_through_super_peers_count_exactly
  dsm.example.a_stencil_through_super_peers_matches_the_serial_stencil
  dsm.mpi.a_sigkilled_client_under_super_peers_gives_survivors_errors_not_a_hang
  dsm.mpi.a_sigkilled_server_under_super_peers_gives_survivors_errors_not_a_hang
  PROPERTIES ENVIRONMENT "STRATA_DSM_TOPOLOGY=super-peer")
# Home replication (Options::replication): server rank 1 SIGKILLed with chunks in every state, or
# in the middle of racing increments: nothing is lost; `off` is the control (peer_dead).
strata_dsm_mpi_program(dsm_replication_test)
foreach(mode states racing off)
  set(name dsm.mpi.with_replication_a_sigkilled_server_loses_no_chunk_in_any_state)
  if(mode STREQUAL racing)
    set(name dsm.mpi.with_replication_increments_racing_a_server_death_all_count)
  elseif(mode STREQUAL off)
    set(name dsm.mpi.without_replication_a_sigkilled_servers_chunks_fail_peer_dead)
  endif()
  add_test(NAME ${name}
    COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dsm/dsm_replication_test.sh
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_replication_test> ${mode})
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT 150)
endforeach()
# Node faults on emulated nodes (tests/python/test_faults_across_nodes.py runs it).
strata_dsm_mpi_program(dsm_node_fault_test)
strata_dsm_mpi_program(dsm_bad_inputs_test)
strata_dsm_mpi_test(dsm.mpi.bad_inputs_give_errors_naming_them PROGRAM dsm_bad_inputs_test NP 3)
# Pollers at SCHED_BATCH (docs/dsm.md, "Transport"), and at the normal policy when switched off.
strata_dsm_mpi_program(dsm_poller_policy_test)
strata_dsm_mpi_test(dsm.mpi.pollers_run_at_sched_batch_and_api_threads_keep_their_policy
  PROGRAM dsm_poller_policy_test NP 3 ARGS batch)
add_test(NAME dsm.mpi.with_batch_pollers_off_every_thread_keeps_the_normal_policy
  COMMAND ${MPIEXEC_EXECUTABLE} -n 3 -genv STRATA_DSM_BATCH_POLLERS 0 $<TARGET_FILE:dsm_poller_policy_test> other)
set_tests_properties(dsm.mpi.with_batch_pollers_off_every_thread_keeps_the_normal_policy PROPERTIES
  LABELS "integration;mpi" TIMEOUT 120)

# The DSM example (examples/dsm): built beside the strata binary, run by `strata demo` and here.
add_executable(dsm_stencil ${CMAKE_SOURCE_DIR}/examples/dsm/dsm_stencil.cpp)
target_link_libraries(dsm_stencil PRIVATE strata::dsm MPI::MPI_CXX fmt::fmt strata_warnings)
strata_dsm_mpi_test(dsm.example.a_stencil_over_one_server_matches_the_serial_stencil PROGRAM dsm_stencil NP 4 ARGS 1 512 30)
strata_dsm_mpi_test(dsm.example.a_stencil_over_four_servers_matches_the_serial_stencil PROGRAM dsm_stencil NP 7 ARGS 4 256 20)
add_test(NAME dsm.example.a_bad_argument_exits_2_naming_it
  COMMAND /bin/sh -c "out=$(\"$0\" -n 2 \"$1\" 9 2>&1); rc=$?; echo \"$out\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q 'servers=9: not an integer in \\[1, 1\\]'"
          ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_stencil>)
set_tests_properties(dsm.example.a_bad_argument_exits_2_naming_it PROPERTIES LABELS "integration;mpi" TIMEOUT 60)
add_test(NAME dsm.example.a_bad_topology_in_the_environment_fails_join_naming_it
  COMMAND /bin/sh -c "out=$(STRATA_DSM_TOPOLOGY=ring \"$0\" -n 2 \"$1\" 1 64 2 2>&1); rc=$?; echo \"$out\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q 'STRATA_DSM_TOPOLOGY=ring: not a topology (direct or super-peer)'"
          ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_stencil>)
set_tests_properties(dsm.example.a_bad_topology_in_the_environment_fails_join_naming_it PROPERTIES
  LABELS "integration;mpi" TIMEOUT 60)
foreach(switch NODE_SHARING DOZE BATCH_POLLERS)
  string(TOLOWER ${switch} lower)
  add_test(NAME dsm.example.a_bad_${lower}_switch_in_the_environment_fails_join_naming_it
    COMMAND /bin/sh -c "out=$(STRATA_DSM_${switch}=yes \"$0\" -n 2 \"$1\" 1 64 2 2>&1); rc=$?; echo \"$out\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q 'STRATA_DSM_${switch}=yes: not 0 or 1'"
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_stencil>)
  set_tests_properties(dsm.example.a_bad_${lower}_switch_in_the_environment_fails_join_naming_it PROPERTIES
    LABELS "integration;mpi" TIMEOUT 60)
endforeach()

# Tag and communicator isolation (tests/mpi/strata_traffic_stays_apart_from_every_application_tag.cpp):
# the application uses every tag on MPI_COMM_WORLD while libstrata-mpi and libstrata-dsm talk;
# --stray injects one foreign message, which the program must catch and name.
add_executable(strata_traffic_stays_apart_from_every_application_tag
  mpi/strata_traffic_stays_apart_from_every_application_tag.cpp)
target_link_libraries(strata_traffic_stays_apart_from_every_application_tag PRIVATE strata_mpi strata::dsm MPI::MPI_CXX
  fmt::fmt strata_warnings)
foreach(mode clean stray)
  set(name mpi.strata_traffic_stays_apart_from_every_application_tag)
  if(mode STREQUAL stray)
    set(name mpi.a_foreign_message_among_the_application_tags_is_caught)
  endif()
  add_test(NAME ${name}
    COMMAND /bin/sh -c "d=$(mktemp -d /var/tmp/strata-tags-XXXXXX) && \"$0\" -n 4 \"$1\" \"$d\" $2; rc=$?; cat \"$d\"/failure-*.txt 2>/dev/null; rm -rf \"$d\"; exit $rc"
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:strata_traffic_stays_apart_from_every_application_tag>
            $<IF:$<STREQUAL:${mode},stray>,--stray,>)
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT 180)
endforeach()
set_tests_properties(mpi.a_foreign_message_among_the_application_tags_is_caught PROPERTIES
  PASS_REGULAR_EXPRESSION "a message that is not the application.s|is still waiting on MPI_COMM_WORLD")

# The event log (Options::event_log) against the transport's counters, its capacity, and a planted file.
strata_dsm_mpi_program(dsm_event_log_test)
foreach(mode full small exists)
  set(name dsm.mpi.the_event_log_records_every_message_the_counters_count)
  if(mode STREQUAL small)
    set(name dsm.mpi.an_event_log_past_its_capacity_counts_what_it_dropped)
  elseif(mode STREQUAL exists)
    set(name dsm.mpi.an_event_log_never_replaces_a_file_and_join_fails_on_every_rank)
  endif()
  add_test(NAME ${name}
    COMMAND /bin/sh -c "d=$(mktemp -d /tmp/strata-dsm-log-XXXXXX) && \"$0\" -n 3 \"$1\" \"$d\" $2; rc=$?; rm -rf \"$d\"; exit $rc"
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:dsm_event_log_test> ${mode})
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT 120)
endforeach()

# The channel under the DSM and distributed OCR (src/net), one MPI program per test
# (mpi_dsm/channel_*_test.cpp, sharing mpi_dsm/channel_test.hpp): `launch` is mpiexec's arguments
# before the program.
function(strata_channel_test program name timeout)
  add_executable(${program} mpi_dsm/${program}.cpp)
  target_link_libraries(${program} PRIVATE strata_net_mpi MPI::MPI_CXX fmt::fmt strata_warnings)
  target_include_directories(${program} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # mpi_dsm/, support/
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${ARGN} $<TARGET_FILE:${program}>)
  set_tests_properties(${name} PROPERTIES LABELS "integration;mpi" TIMEOUT ${timeout})
endfunction()

# A sender stopped in the middle of a large message holds up only its own messages. One "host" per
# rank and UCX over TCP, so that the message moves only while its sender runs (UCX's shared-memory
# transports would read it anyway).
strata_channel_test(channel_stalled_sender_test dsm.mpi.a_sender_stopped_midway_holds_up_only_its_own_messages 180
  -launcher fork -hosts 127.0.0.1,127.0.0.2,127.0.0.3 -ppn 1 -n 3 -genv UCX_TLS tcp,self)

# A peer quiet for longer than the timeout is alive while it answers pings; one that answers nothing
# is found dead (check_alive measures from the first unanswered ping, not from the last message).
strata_channel_test(channel_liveness_test
  dsm.mpi.a_quiet_peer_is_dead_only_once_it_leaves_pings_unanswered_for_the_timeout 120 -n 2)

# A peer whose message waits in MPI, not yet polled by the checking rank, is alive: a DSM server
# behind on its queue must not declare dead a client whose answer is already there.
strata_channel_test(channel_unpolled_answer_test dsm.mpi.a_peer_whose_message_waits_unpolled_is_alive_until_it_is_taken
  120 -n 2)
