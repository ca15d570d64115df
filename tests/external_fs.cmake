# strata-fsd and FuseExposure (docs/external-fs.md): real kernel FUSE mounts,
# real processes killed. ctest names start with "external_fs.".
strata_add_test_binary(strata_external_fs_tests LABEL integration TIMEOUT 120 PREFIX "external_fs." SOURCES
  integration/external_fs_test.cpp
  integration/external_fs_crash_test.cpp)
target_link_libraries(strata_external_fs_tests PRIVATE strata_external_fuse)
target_compile_definitions(strata_external_fs_tests PRIVATE STRATA_CLI="$<TARGET_FILE:strata_cli>")
add_dependencies(strata_external_fs_tests strata_cli strata_fsd)
