# Distributed shared memory (docs/dsm.md): ctest names start with "dsm.".
# The protocol tables and the randomized explorer run in-process (label unit).
strata_add_test_binary(strata_dsm_unit_tests LABEL unit TIMEOUT 120 PREFIX "dsm." SOURCES
  unit/dsm_protocol_table_test.cpp
  unit/dsm_protocol_sequences_test.cpp
  unit/dsm_explorer_test.cpp)
target_link_libraries(strata_dsm_unit_tests PRIVATE strata_dsm_protocol)
