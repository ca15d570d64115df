# Distributed OCR (docs/runtime.md, "Distributed OCR"): the programs of
# tests/ocr/dist/programs.txt, one behaviour each, built as the conformance
# programs are (ocr_conform.cmake), each run on 1, 2 and 4 ranks through
# `strata ocr -n N` (mpiexec). A run passes on its exit code alone.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/ocr/dist/programs.txt _strata_ocr_dist_lines REGEX "^[a-z]")
foreach(line IN LISTS _strata_ocr_dist_lines)
  string(REPLACE " " ";" fields "${line}")
  list(POP_FRONT fields name code)
  strata_ocr_program(ocr_dist_${name} ocr/dist/${name}.c)
  target_include_directories(ocr_dist_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/ocr/dist)
  foreach(ranks 1 2 4)
    add_test(NAME ocr.dist.${name}.on_${ranks}_ranks
             COMMAND ${STRATA_OCR_EXPECT_EXIT} ${code} $<TARGET_FILE:strata_cli> ocr -n ${ranks}
                     $<TARGET_FILE:ocr_dist_${name}> ${fields})
    # Four ranks on a 2-core machine: ctest runs no other test beside them.
    set(cores ${ranks})
    if(cores GREATER 2)
      set(cores 2)
    endif()
    set_tests_properties(ocr.dist.${name}.on_${ranks}_ranks PROPERTIES
      LABELS "integration;mpi" TIMEOUT 60 PROCESSORS ${cores})
  endforeach()
endforeach()
