# The workflow layer's tests (docs/workflow.md): `ctest --preset default -R '^workflow\.'`.
strata_add_test_binary(strata_workflow_unit_tests LABEL unit TIMEOUT 60 PREFIX "workflow." SOURCES
  unit/workflow_parse_test.cpp
  unit/workflow_threads_test.cpp
  unit/workflow_mpi_pieces_test.cpp)
target_link_libraries(strata_workflow_unit_tests PRIVATE strata_workflow)
target_include_directories(strata_workflow_unit_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)  # header-only internals

# The 2.5 GiB MPI message (3 pieces of at most 1 GiB) runs alone, for its memory.
strata_add_test_binary(strata_workflow_integration_tests LABEL integration TIMEOUT 180 PREFIX "workflow."
  SERIAL "*2_5_GiB*" SOURCES
  integration/workflow_run_test.cpp)
target_link_libraries(strata_workflow_integration_tests PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(strata_workflow_integration_tests PRIVATE
  STRATA_CLI="$<TARGET_FILE:strata_cli>" STRATA_EXAMPLES="${CMAKE_SOURCE_DIR}/examples")
add_dependencies(strata_workflow_integration_tests strata_cli strata_workflow_task)
