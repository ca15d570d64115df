# Shared objects (docs/shm.md): ctest names start with "shm.".
strata_add_test_binary(strata_shm_unit_tests LABEL unit TIMEOUT 60 PREFIX "shm." SOURCES
  unit/shm_segment_test.cpp
  unit/shm_objects_test.cpp
  unit/shm_handle_test.cpp
  unit/shm_named_handle_test.cpp)
target_sources(strata_shm_unit_tests PRIVATE unit/shm_port_test.cpp)
target_sources(strata_shm_unit_tests PRIVATE unit/shm_boundary_test.cpp)
# The port repair on hand-built states (src/shm/port_repair.hpp).
target_sources(strata_shm_unit_tests PRIVATE unit/shm_port_repair_test.cpp)
# The node arena the DSM hands same-node data through (src/shm/node_arena.hpp).
target_sources(strata_shm_unit_tests PRIVATE unit/shm_node_arena_test.cpp)
target_include_directories(strata_shm_unit_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)

strata_add_test_binary(strata_shm_integration_tests LABEL integration TIMEOUT 120 PREFIX "shm." SOURCES
  integration/shm_port_process_test.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_crash_test.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_port_heal_test.cpp
  integration/shm_port_heal_random_test.cpp integration/shm_kill_rounds.cpp integration/shm_kill_children.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_namespace_test.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_trust_test.cpp)
# A named object still being constructed by another process.
target_sources(strata_shm_integration_tests PRIVATE integration/shm_slow_construct_test.cpp)

# Handles over MPI (STRATA_MPI_HANDLE from libstrata-mpi), with mpiexec.
if(TARGET strata_mpi)
  add_executable(strata_shm_mpi_handle_test integration/shm_mpi_handle_test.cpp)
  target_link_libraries(strata_shm_mpi_handle_test PRIVATE strata_mpi strata::strata MPI::MPI_C fmt::fmt)
  add_test(NAME shm.mpi.handles_travel_between_ranks_as_strata_mpi_handle
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:strata_shm_mpi_handle_test> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(shm.mpi.handles_travel_between_ranks_as_strata_mpi_handle PROPERTIES LABELS "integration;mpi" TIMEOUT 120)

  # Ports with sync=mpi: 1->1 and 1->2 through slots, waking by MPI messages.
  add_executable(strata_shm_mpi_port_test integration/shm_mpi_port_test.cpp)
  target_link_libraries(strata_shm_mpi_port_test PRIVATE strata_mpi strata::strata MPI::MPI_C fmt::fmt)
  add_test(NAME shm.mpi.ports_with_sync_mpi_deliver_every_message_one_to_one_and_fanned_out
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:strata_shm_mpi_port_test> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(shm.mpi.ports_with_sync_mpi_deliver_every_message_one_to_one_and_fanned_out
    PROPERTIES LABELS "integration;mpi" TIMEOUT 120)
endif()

target_sources(strata_shm_integration_tests PRIVATE integration/shm_admin_test.cpp)
target_link_libraries(strata_shm_integration_tests PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(strata_shm_integration_tests PRIVATE STRATA_CLI="$<TARGET_FILE:strata_cli>")
add_dependencies(strata_shm_integration_tests strata_cli)

# System calls per handoff, counted with perf tracepoint counters (src/core/syscall_counter.hpp).
target_sources(strata_shm_integration_tests PRIVATE integration/shm_port_syscalls_test.cpp)
target_include_directories(strata_shm_integration_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)  # core/syscall_counter.hpp
