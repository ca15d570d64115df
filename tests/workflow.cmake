# The workflow layer's tests (docs/workflow.md): `ctest --preset default -R '^workflow\.'`.
strata_add_test_binary(strata_workflow_unit_tests LABEL unit TIMEOUT 60 PREFIX "workflow." SOURCES
  unit/workflow_parse_test.cpp
  unit/workflow_threads_test.cpp)
target_link_libraries(strata_workflow_unit_tests PRIVATE strata_workflow)

strata_add_test_binary(strata_workflow_integration_tests LABEL integration TIMEOUT 180 PREFIX "workflow." SOURCES
  integration/workflow_run_test.cpp)
target_link_libraries(strata_workflow_integration_tests PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(strata_workflow_integration_tests PRIVATE
  STRATA_CLI="$<TARGET_FILE:strata_cli>" STRATA_EXAMPLES="${CMAKE_SOURCE_DIR}/examples")
add_dependencies(strata_workflow_integration_tests strata_cli strata_workflow_task)
