// SPDX-License-Identifier: MIT
// Bad inputs to libstrata-dsm give errors naming the parameter and the value,
// and leave nothing behind. Run with mpiexec -n 3 (1 server, 2 clients).
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

template <class T>
void expect_error(const strata::Result<T>& r, strata::Errc code, const std::string& needle, int line) {
    if (r.has_value()) {
        std::fprintf(stderr, "rank %d: line %d: succeeded, expected %s naming '%s'\n", dsm_test::g_rank, line,
                     std::string(strata::to_string(code)).c_str(), needle.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (r.error().code != code || r.error().message.find(needle) == std::string::npos) {
        std::fprintf(stderr, "rank %d: line %d: got '%s', expected %s naming '%s'\n", dsm_test::g_rank, line,
                     r.error().what().c_str(), std::string(strata::to_string(code)).c_str(), needle.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#define EXPECT_ERROR(r, code, needle) expect_error((r), strata::Errc::code, (needle), __LINE__)

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // A node count beyond the job, and none at all: every rank fails alike, before any communication.
    EXPECT_ERROR(strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = size}), invalid_argument,
                 "servers=" + std::to_string(size));
    EXPECT_ERROR(strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 0}), invalid_argument, "servers=0");
    EXPECT_ERROR(strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1, .timeout = std::chrono::milliseconds(0)}),
                 invalid_argument, "timeout=0ms");
    // Replication copies each home to another server, and cannot recover what a super-peer passes on.
    EXPECT_ERROR(strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1, .replication = true}), invalid_argument,
                 "replication=on with servers=1");
    EXPECT_ERROR(
        strata::dsm::Node::join(MPI_COMM_WORLD,
                                {.servers = 2, .topology = strata::dsm::Topology::super_peer, .replication = true}),
        invalid_argument, "replication=on with topology=super-peer");

    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        EXPECT_ERROR(node->allocate(8), invalid_argument, "is a server");
        DSM_CHECK_OK(node->serve());
        MPI_Finalize();
        return 0;
    }
    EXPECT_ERROR(node->serve(), invalid_argument, "is a client");
    EXPECT_ERROR(node->allocate(0), invalid_argument, "size=0");
    EXPECT_ERROR(node->allocate(8, strata::dsm::HomePolicy::node(5)), invalid_argument, "home=node(5)");
    EXPECT_ERROR(node->acquire_read(0), invalid_argument, "chunk=0x0");
    // A well-formed id of server 0 that was never allocated.
    const strata::dsm::ChunkId unknown = 999;
    EXPECT_ERROR(node->acquire_read(unknown), not_found, "chunk=0x3e7");
    EXPECT_ERROR(node->acquire_write(unknown), not_found, "unknown chunk");
    EXPECT_ERROR(node->size_of(unknown), not_found, "not cached");  // the failed acquire left nothing
    EXPECT_ERROR(node->subscribe(unknown), not_found, "chunk=0x3e7");

    auto id = node->allocate(16);
    DSM_CHECK_OK(id);
    const std::string name = fmt::format("chunk={:#x}", *id);
    EXPECT_ERROR(node->release(*id), invalid_argument, "release without acquire");
    DSM_CHECK_OK(node->acquire_read(*id));
    DSM_CHECK_OK(node->release(*id));
    EXPECT_ERROR(node->release(*id), invalid_argument, name);
    DSM_CHECK_OK(node->acquire_write(*id));
    EXPECT_ERROR(node->evict(*id), busy, name);
    EXPECT_ERROR(node->free(*id), busy, name);
    DSM_CHECK_OK(node->release(*id));
    // Client 0's chunk, read by both, then freed by client 0: gone for both.
    strata::dsm::ChunkId shared = *id;
    MPI_Bcast(&shared, 1, MPI_UINT64_T, 0, node->clients_comm());
    DSM_CHECK_OK(node->acquire_read(shared));
    DSM_CHECK_OK(node->release(shared));
    DSM_CHECK_OK(node->barrier());
    if (node->client_index() == 0) {
        DSM_CHECK_OK(node->free(shared));
    }
    DSM_CHECK_OK(node->barrier());
    EXPECT_ERROR(node->acquire_read(shared), not_found, fmt::format("chunk={:#x}", shared));
    EXPECT_ERROR(node->wait_notification(std::chrono::milliseconds(50)), timeout, "timeout=50ms");
    DSM_CHECK_OK(node->leave());
    EXPECT_ERROR(node->leave(), invalid_argument, "already left");
    if (node->client_index() == 0) {
        std::printf("dsm_bad_inputs_test: every bad input was refused with an error naming it\n");
    }
    MPI_Finalize();
    return 0;
}
