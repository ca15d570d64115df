# The blocking monitor's tests (include/strata/monitor.hpp): `ctest -R '^monitor\.'`.
strata_add_test_binary(strata_monitor_unit_tests LABEL unit TIMEOUT 60 PREFIX "monitor." SOURCES
  unit/monitor_options_test.cpp
  unit/monitor_off_test.cpp)
