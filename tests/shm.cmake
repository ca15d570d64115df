# Shared objects (docs/shm.md): ctest names start with "shm.".
strata_add_test_binary(strata_shm_unit_tests LABEL unit TIMEOUT 60 PREFIX "shm." SOURCES
  unit/shm_segment_test.cpp
  unit/shm_objects_test.cpp
  unit/shm_handle_test.cpp)
target_sources(strata_shm_unit_tests PRIVATE unit/shm_port_test.cpp)

strata_add_test_binary(strata_shm_integration_tests LABEL integration TIMEOUT 120 PREFIX "shm." SOURCES
  integration/shm_port_process_test.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_crash_test.cpp)
target_sources(strata_shm_integration_tests PRIVATE integration/shm_namespace_test.cpp)
