# One warning set for every strata target; errors in CI and in every preset.
add_library(strata_warnings INTERFACE)
target_compile_options(strata_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  $<$<BOOL:${STRATA_WERROR}>:-Werror>)
