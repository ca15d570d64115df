# Real containers (docs/shm.md, "Containers"): tasks run by crun in the image
# of scripts/container-image; ctest names start with "container.". Under
# CI=true a missing crun or image fails.
add_executable(strata_container_task integration/container_task.cpp)
target_link_libraries(strata_container_task PRIVATE strata::strata strata_warnings)

strata_add_test_binary(strata_container_tests LABEL integration TIMEOUT 300 PREFIX "container." SOURCES
  integration/container_shm_test.cpp)
target_include_directories(strata_container_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(strata_container_tests PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(strata_container_tests PRIVATE STRATA_CLI="$<TARGET_FILE:strata_cli>")
add_dependencies(strata_container_tests strata_cli strata_container_task)

# External tasks in containers (container = "strata", docs/external.md).
strata_add_test_binary(strata_external_container_tests LABEL integration TIMEOUT 300 PREFIX "container." SOURCES
  integration/external_container_test.cpp)
target_link_libraries(strata_external_container_tests PRIVATE strata::runtime)
target_include_directories(strata_external_container_tests PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(strata_external_container_tests PRIVATE STRATA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(strata_external_container_tests strata_fsd)
