# The blocking monitor's tests (include/strata/monitor.hpp): `ctest -R '^monitor\.'`.
strata_add_test_binary(strata_monitor_unit_tests LABEL unit TIMEOUT 60 PREFIX "monitor." SOURCES
  unit/monitor_options_test.cpp
  unit/monitor_off_test.cpp)

# Real BPF (root) and real threads blocked on pipes.
strata_add_test_binary(strata_monitor_integration_tests LABEL integration TIMEOUT 120 PREFIX "monitor." SOURCES
  integration/monitor_backends_test.cpp
  integration/monitor_ebpf_test.cpp
  integration/monitor_auto_test.cpp)
target_link_libraries(strata_monitor_integration_tests PRIVATE PkgConfig::LIBBPF)
