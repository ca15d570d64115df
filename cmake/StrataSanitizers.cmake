# STRATA_SANITIZE=address,undefined or thread instruments every target.
if(STRATA_SANITIZE)
  add_compile_options(-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${STRATA_SANITIZE})
endif()

# STRATA_FUZZ=ON (the `fuzz` preset, clang): every object gets libFuzzer's
# coverage instrumentation, and tests/fuzz/ links its targets with libFuzzer
# (docs/fuzzing.md). Without it the same targets build with a replay driver.
option(STRATA_FUZZ "Build tests/fuzz/ as libFuzzer targets (clang)" OFF)
if(STRATA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
    message(FATAL_ERROR "STRATA_FUZZ needs clang 16 or newer (the fuzz preset uses Debian's clang-16), "
                        "found ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  # libstdc++ 12 declares std::expected only when __cpp_concepts >= 202002L.
  # Clang 16-18 implement what <expected> needs (P0848, conditionally trivial
  # special members) but still announce 201907L; they compile it correctly.
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 19)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-D__cpp_concepts=202002L>
                        $<$<COMPILE_LANGUAGE:CXX>:-Wno-builtin-macro-redefined>
                        $<$<COMPILE_LANGUAGE:CXX>:-Wno-macro-redefined>)
  endif()
endif()
