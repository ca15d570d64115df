# The examples README.md and docs/getting-started/ run, built in the tree
# beside the strata command (build/<preset>/bin/), so a page's commands work
# right after `cmake --workflow --preset default`; tests/python/test_docs.py
# runs every marked example and compares its output with the page.
# examples/CMakeLists.txt builds the same sources against an installed strata.
# (storage_window and dsm_stencil are built with the tests: tests/mpi, tests/dsm.cmake.)

# An MPI program that knows nothing about strata: MPI only, no strata header or
# library; the docs put it on storage windows with LD_PRELOAD.
add_executable(rma_counter ${PROJECT_SOURCE_DIR}/examples/mpi/rma_counter.c)
target_link_libraries(rma_counter PRIVATE MPI::MPI_C)

# OCR 1.2 programs: libstrata-ocr provides main().
add_executable(parallel_sum ${PROJECT_SOURCE_DIR}/examples/ocr/parallel_sum.c)
target_link_libraries(parallel_sum PRIVATE strata::ocr)
add_executable(external_tasks ${PROJECT_SOURCE_DIR}/examples/ocr/external_tasks.c)
target_link_libraries(external_tasks PRIVATE strata::ocr)
add_executable(blocking_tasks ${PROJECT_SOURCE_DIR}/examples/ocr/blocking_tasks.c)
target_link_libraries(blocking_tasks PRIVATE strata::ocr)

# The flagship workflow (examples/flagship, docs/getting-started/flagship.md): a distributed
# OCR heat diffusion whose frames go to a Python analysis through a shm port (frames.cpp).
# Its checkpoints are MPI storage windows (heat_ckpt.c): libstrata-mpi before MPI on the link line.
add_executable(flagship_heat ${PROJECT_SOURCE_DIR}/examples/flagship/heat.c
                             ${PROJECT_SOURCE_DIR}/examples/flagship/heat_frames.c
                             ${PROJECT_SOURCE_DIR}/examples/flagship/heat_ckpt.c
                             ${PROJECT_SOURCE_DIR}/examples/flagship/frames.cpp)
target_link_libraries(flagship_heat PRIVATE strata::ocr strata::strata strata::mpi MPI::MPI_C)
# Its steering job: global statistics and alpha shared across nodes through the DSM.
if(TARGET strata::dsm)
  add_executable(flagship_steer ${PROJECT_SOURCE_DIR}/examples/flagship/steer.cpp)
  target_include_directories(flagship_steer PRIVATE ${PROJECT_SOURCE_DIR}/examples/flagship)
  target_link_libraries(flagship_steer PRIVATE strata::dsm strata::strata fmt::fmt)
endif()
