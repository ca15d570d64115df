# Install rules: `cmake --install <build> --prefix P` lays out strata as an HPC
# library (docs/install.md):
#
#   P/bin/                    strata, strata-fsd
#   P/lib/                    libstrata, libstrata-mpi, libstrata-ocr, libstrata-dsm (.so.MAJOR)
#   P/lib/cmake/strata/       strataConfig.cmake: find_package(strata) -> strata::strata, ::mpi, ::ocr, ::dsm
#   P/lib/pkgconfig/          strata.pc, strata-mpi.pc, strata-ocr.pc, strata-dsm.pc
#   P/include/strata, ocr/    public headers (C++ API, MPI hint names, OCR 1.2 C API)
#   P/libexec/strata/         helpers the strata command starts (strata-workflow-task,
#                             strata-mpi-probe, demo programs) and the benchmark harnesses
#   P/share/strata/bench/     the benchmark suites (<suite>/run), found by `strata bench`
#   P/share/strata/bpf/       the BPF objects (embedded in libstrata; installed to be inspected)
#   P/share/doc/strata/       README, docs/, examples/
#
# Every installed binary finds the installed libraries through an $ORIGIN-relative
# RPATH, and the strata command finds its helpers and suites relative to itself
# (tools/strata/paths.hpp), so the prefix can be moved or copied as a whole.
include(CMakePackageConfigHelpers)

set(STRATA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
set(STRATA_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(STRATA_INSTALL_HELPERDIR ${CMAKE_INSTALL_LIBEXECDIR}/strata)
set(STRATA_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/strata)

# $ORIGIN-relative RPATHs: bindir -> libdir, libexecdir/strata -> libdir, libdir -> itself.
file(RELATIVE_PATH _strata_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH _strata_helper_to_lib ${CMAKE_INSTALL_FULL_LIBEXECDIR}/strata ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH _strata_helper_to_bin ${CMAKE_INSTALL_FULL_LIBEXECDIR}/strata ${CMAKE_INSTALL_FULL_BINDIR})
file(RELATIVE_PATH _strata_pc_to_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})

# --- libraries ---------------------------------------------------------------
# name: the CMake target; export name: strata::<export name>.
set(_strata_libraries strata strata_mpi strata_ocr)
if(TARGET strata_dsm)
  list(APPEND _strata_libraries strata_dsm)
endif()
set_target_properties(strata PROPERTIES EXPORT_NAME strata)
set_target_properties(strata_mpi PROPERTIES EXPORT_NAME mpi)
set_target_properties(strata_ocr PROPERTIES EXPORT_NAME ocr)
if(TARGET strata_dsm)
  set_target_properties(strata_dsm PROPERTIES EXPORT_NAME dsm)
endif()
set_target_properties(${_strata_libraries} PROPERTIES INSTALL_RPATH "$ORIGIN")

# What users of the installed targets get (the build tree's include paths are
# BUILD_INTERFACE only). strata::strata is C++23 (std::expected) and its shm
# headers use Boost.Interprocess; strata::ocr is the OCR C API, usable from C.
target_include_directories(strata INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(strata INTERFACE Boost::headers)
target_compile_features(strata INTERFACE cxx_std_23)
target_include_directories(strata_mpi INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_include_directories(strata_ocr INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/ocr>
                                                $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
if(TARGET strata_dsm)
  target_include_directories(strata_dsm INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endif()

# Two export sets: the C targets (strata::mpi, strata::ocr), usable from a
# project that enables only C, and the C++ targets (strata::strata with fmt and
# Boost, strata::dsm with MPI's C++ target), loaded when the project enables CXX.
set(_strata_cxx_libraries strata)
if(TARGET strata_dsm)
  list(APPEND _strata_cxx_libraries strata_dsm)
endif()
install(TARGETS strata_mpi strata_ocr EXPORT strataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
install(TARGETS ${_strata_cxx_libraries} EXPORT strataCxxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)

# --- programs ----------------------------------------------------------------
set_target_properties(strata_cli strata_fsd PROPERTIES INSTALL_RPATH "$ORIGIN/${_strata_bin_to_lib}")
install(TARGETS strata_cli strata_fsd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# The executables defined in `dir` and the directories below it.
function(_strata_executables_in dir out_var)
  set(found "")
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _strata_executables_in(${subdir} more)
    list(APPEND found ${more})
  endforeach()
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

# Helpers: what the strata command starts (tools/strata/paths.hpp find_helper),
# the demo's programs (built with the tests), and every benchmark harness.
set(_strata_helpers "")
foreach(target strata_workflow_task strata-mpi-probe storage_window plain_mpi_windows ocr_fibonacci)
  if(TARGET ${target})
    list(APPEND _strata_helpers ${target})
  endif()
endforeach()
if(STRATA_BUILD_BENCH)
  _strata_executables_in(${PROJECT_SOURCE_DIR}/bench _strata_harnesses)
  list(APPEND _strata_helpers ${_strata_harnesses})
endif()
set_target_properties(${_strata_helpers} PROPERTIES INSTALL_RPATH "$ORIGIN/${_strata_helper_to_lib}")
install(TARGETS ${_strata_helpers} RUNTIME DESTINATION ${STRATA_INSTALL_HELPERDIR} COMPONENT runtime)
# The suites expect strata and strata-fsd beside their harnesses (STRATA_BIN_DIR):
# relative symlinks to the ones in bindir.
set(_strata_links ${PROJECT_BINARY_DIR}/install-links)
file(MAKE_DIRECTORY ${_strata_links})
foreach(program strata strata-fsd)
  file(CREATE_LINK ${_strata_helper_to_bin}/${program} ${_strata_links}/${program} SYMBOLIC)
  install(FILES ${_strata_links}/${program} DESTINATION ${STRATA_INSTALL_HELPERDIR} COMPONENT runtime)
endforeach()

# --- headers -----------------------------------------------------------------
# workflow.hpp is left out: its library (strata_workflow) is internal to the
# strata command; shm/testing.hpp holds crash-test hooks.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/strata ${PROJECT_SOURCE_DIR}/include/ocr
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp"
  PATTERN "workflow.hpp" EXCLUDE PATTERN "testing.hpp" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/include/strata/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata COMPONENT development)

# --- CMake package -------------------------------------------------------------
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${STRATA_INSTALL_CMAKEDIR} COMPONENT development)
install(EXPORT strataCxxTargets NAMESPACE strata:: DESTINATION ${STRATA_INSTALL_CMAKEDIR} COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${STRATA_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  DESTINATION ${STRATA_INSTALL_CMAKEDIR} COMPONENT development)

# --- pkg-config ----------------------------------------------------------------
# Relocatable: prefix is found from the .pc file's own directory.
# strata-mpi.pc requires the MPI that libstrata-mpi was built with, so
# `cc app.c $(pkg-config --cflags --libs strata-mpi)` links strata's MPI_
# symbols before MPI's.
find_package(PkgConfig QUIET)
set(STRATA_PC_MPI "")
foreach(module mpich ompi-c mpi)
  pkg_check_modules(_strata_pc_mpi QUIET ${module})
  if(_strata_pc_mpi_FOUND)
    set(STRATA_PC_MPI ${module})
    break()
  endif()
endforeach()
set(STRATA_PC_PREFIX "\${pcfiledir}/${_strata_pc_to_prefix}")
foreach(pc strata strata-mpi strata-ocr strata-dsm)
  if(pc STREQUAL "strata-dsm" AND NOT TARGET strata_dsm)
    continue()
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/pkgconfig/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc
    DESTINATION ${STRATA_INSTALL_PKGCONFIGDIR} COMPONENT development)
endforeach()

# --- data: benchmark suites, BPF objects, docs, examples -------------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bench/ DESTINATION ${STRATA_INSTALL_DATADIR}/bench
  COMPONENT runtime USE_SOURCE_PERMISSIONS
  FILES_MATCHING PATTERN "run" PATTERN "*.py" PATTERN "*.sh"
  PATTERN "__pycache__" EXCLUDE)
# bench/lib.sh reads where the harnesses are from layout.sh, which only an installed tree has.
file(RELATIVE_PATH _strata_bench_to_helper ${CMAKE_INSTALL_FULL_DATADIR}/strata/bench
     ${CMAKE_INSTALL_FULL_LIBEXECDIR}/strata)
file(WRITE ${PROJECT_BINARY_DIR}/bench-layout.sh
     "# Written by CMake (cmake/StrataInstall.cmake): the installed layout, for lib.sh.\n"
     "strata_bench_helper_dir=${_strata_bench_to_helper}\n")
install(FILES ${PROJECT_BINARY_DIR}/bench-layout.sh DESTINATION ${STRATA_INSTALL_DATADIR}/bench
  RENAME layout.sh COMPONENT runtime)
get_property(_strata_bpf_objects GLOBAL PROPERTY STRATA_BPF_OBJECTS)
install(FILES ${_strata_bpf_objects} DESTINATION ${STRATA_INSTALL_DATADIR}/bpf COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  COMPONENT runtime PATTERN "build" EXCLUDE)
