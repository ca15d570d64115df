# strata-video (apps/video, docs/video.md): ctest names start with "video.". The kernel's unit
# test runs in-process (label unit); the pipeline's tests are Python (tests/python/test_video*.py).
strata_add_test_binary(strata_video_unit_tests LABEL unit TIMEOUT 60 PREFIX "video." SOURCES
  unit/video_kernel_test.cpp
  unit/video_header_test.cpp)
target_link_libraries(strata_video_unit_tests PRIVATE strata_video_kernel)
