# Shared objects (docs/shm.md): ctest names start with "shm.".
strata_add_test_binary(strata_shm_unit_tests LABEL unit TIMEOUT 60 PREFIX "shm." SOURCES
  unit/shm_segment_test.cpp
  unit/shm_objects_test.cpp
  unit/shm_handle_test.cpp)
