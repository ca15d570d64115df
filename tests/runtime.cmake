# The runtime layer's tests (docs/runtime.md): scheduler and OCR semantics
# (unit, run under TSan in scripts/test), and small OCR programs in C run
# directly and through `strata ocr` (integration).
strata_add_test_binary(strata_runtime_unit_tests LABEL unit TIMEOUT 60 PREFIX "runtime." SOURCES
  unit/runtime_scheduler_test.cpp)
target_link_libraries(strata_runtime_unit_tests PRIVATE strata::runtime)

# OCR programs: built against include/ocr, linked with -lstrata-ocr only.
function(strata_add_ocr_program name)
  cmake_parse_arguments(ARG "" "" "RUNS" ${ARGN})
  add_executable(ocr_${name} ocr/${name}.c)
  target_link_libraries(ocr_${name} PRIVATE strata::ocr)
  target_compile_options(ocr_${name} PRIVATE -Wall -Wextra -Werror)
endfunction()

strata_add_ocr_program(fibonacci)
add_test(NAME runtime.ocr.fibonacci_of_20_is_6765 COMMAND ocr_fibonacci 20)
set_tests_properties(runtime.ocr.fibonacci_of_20_is_6765 PROPERTIES
  LABELS integration TIMEOUT 60 PASS_REGULAR_EXPRESSION "fib\\(20\\) = 6765 \\(expected 6765\\)")
