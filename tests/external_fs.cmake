# strata-fsd and FuseExposure (docs/external-fs.md): real kernel FUSE mounts,
# real processes killed. ctest names start with "external_fs.".
# The stale-mount test runs alone: any other test starting a daemon would clean
# its stale mount before `strata fs ls` can.
strata_add_test_binary(strata_external_fs_tests LABEL integration TIMEOUT 120 PREFIX "external_fs."
  SERIAL "ExternalFsCrash.a_mount_whose_daemon_died_with_its_owner_is_removed_by_strata_fs_ls" SOURCES
  integration/external_fs_test.cpp
  integration/external_fs_crash_test.cpp
  integration/external_fs_temporaries_test.cpp
  integration/external_fs_other_users_test.cpp)
target_link_libraries(strata_external_fs_tests PRIVATE strata_external_fuse)
target_compile_definitions(strata_external_fs_tests PRIVATE STRATA_CLI="$<TARGET_FILE:strata_cli>")
add_dependencies(strata_external_fs_tests strata_cli strata_fsd)
