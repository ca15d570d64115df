# The Debian package (docs/install.md): `cpack --config <build>/CPackConfig.cmake -G DEB`
# (or `cmake --build <build> --target package`) makes strata_<version>_<arch>.deb,
# everything of cmake/StrataInstall.cmake under /usr.
#
# Depends: dpkg-shlibdeps computes the packages of every library the installed
# binaries and libraries link (libfmt9, libspdlog1.10, libbpf1, libmpich12,
# libfuse3-3, libzmq5, libstdc++6, ...), plus the programs strata starts
# (mpiexec from mpich, fusermount3 from fuse3) and the Python that runs the
# benchmark scripts. The headers need the -dev packages of fmt, Boost and
# MPICH: they are Recommends, since a user of the command alone does not.
set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VENDOR "strata")
set(CPACK_PACKAGE_CONTACT "strata developers <strata@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)  # MIT (CONTRIBUTING.md#license)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "One runtime for the data of HPC tasks and workflows\n"
    "The strata command, strata-fsd, libstrata, libstrata-mpi (MPI storage\n"
    "windows through PMPI), libstrata-ocr (the OCR 1.2 API), libstrata-dsm, their\n"
    "headers, CMake package and pkg-config files, benchmark suites and docs.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libstrata* are in this package: dpkg-shlibdeps resolves them here, not from another package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "mpich, fuse3, python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libfmt-dev, libboost-dev, libmpich-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-matplotlib, python3-numpy, crun, debootstrap")  # crun, debootstrap: containers (docs/shm.md)
# ldconfig after install and removal, so the libraries in /usr/lib are found:
# through libc-bin's ldconfig trigger, as Debian's library packages do; the
# postinst and postrm do nothing (cmake/debian/postinst says why).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/cmake/debian/triggers ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
    ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
