# Install tests (issue 16, docs/install.md), label `integration`: each installs
# the build tree into its own temporary prefix under /tmp (outside the source
# tree) and uses it as a user would. They need the whole tree built.
#
#   ctest --preset default -R '^install\.'
set(STRATA_INSTALL_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/install)
function(strata_install_test name script timeout)
  add_test(NAME install.${name}
           COMMAND bash ${STRATA_INSTALL_TESTS}/${script} ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} ${ARGN})
  set_tests_properties(install.${name} PROPERTIES LABELS integration TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endfunction()

strata_install_test(prefix_has_the_library_layout_with_relative_rpaths layout.sh 120)
strata_install_test(examples_build_with_find_package_and_pkg_config_and_run examples.sh 180
                    ${MPIEXEC_EXECUTABLE})
strata_install_test(installed_strata_runs_doctor_demo_and_bench_with_the_source_tree_hidden source_hidden.sh 240)
strata_install_test(deb_depends_on_what_strata_links_and_installs_with_dpkg deb.sh 600)
strata_install_test(bench_suites_answer_help_and_refuse_unknown_options bench_scripts.sh 120)
strata_install_test(pip_installs_the_python_package_into_a_clean_venv pip.sh 600)
strata_install_test(manylinux_wheel_installs_into_a_clean_venv_and_imports_with_the_build_tree_hidden wheel.sh 600)
strata_install_test(bash_zsh_and_fish_completions_are_installed_valid_and_complete_subcommands completion.sh 120)
# The Debian package and the wheel build are the heaviest: not beside each other.
set_tests_properties(install.deb_depends_on_what_strata_links_and_installs_with_dpkg
                     install.pip_installs_the_python_package_into_a_clean_venv
                     install.manylinux_wheel_installs_into_a_clean_venv_and_imports_with_the_build_tree_hidden
                     PROPERTIES RUN_SERIAL TRUE)
strata_install_test(kernel_setup_restores_every_kernel_interface_hidden_in_a_mount_namespace kernel_setup.sh 120)
