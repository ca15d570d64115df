# The external layer's tests (docs/external.md): configuration and command
# templates (unit), and real programs as external tasks of real OCR runs
# (integration: processes, memfds, signals, timeouts).
strata_add_test_binary(strata_external_unit_tests LABEL unit TIMEOUT 60 PREFIX "external." SOURCES
  unit/external_command_test.cpp
  unit/external_config_test.cpp)
target_link_libraries(strata_external_unit_tests PRIVATE strata::runtime)
target_include_directories(strata_external_unit_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)

strata_add_test_binary(strata_external_integration_tests LABEL integration TIMEOUT 120 PREFIX "external." SOURCES
  integration/external_programs_test.cpp
  integration/external_failure_test.cpp
  integration/external_scheduling_test.cpp
  integration/external_signal_test.cpp
  integration/external_exposure_test.cpp
  integration/external_temporaries_test.cpp
  integration/external_handle_test.cpp)
target_link_libraries(strata_external_integration_tests PRIVATE strata::runtime)
target_include_directories(strata_external_integration_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(strata_external_integration_tests PRIVATE STRATA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
  STRATA_PYTHON_DIR="${CMAKE_BINARY_DIR}/python"
  STRATA_EXTERNAL_DAG="$<TARGET_FILE:ocr_app_external_dag>"
  STRATA_EXTERNAL_DAG_CONFIG="${CMAKE_CURRENT_SOURCE_DIR}/ocr/apps/external_dag.toml")
add_dependencies(strata_external_integration_tests ocr_app_external_dag strata_fsd)
if(TARGET strata_python)  # [handle:K]'s reader imports this build's strata
  add_dependencies(strata_external_integration_tests strata_python)
endif()
