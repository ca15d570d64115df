// SPDX-License-Identifier: MIT
#include "task_plan.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "dsm_ports.hpp"
#include "mpi_ports.hpp"
#include "remote_outputs.hpp"
#include "shm_ports.hpp"

namespace strata::workflow::detail {

namespace {

bool through_port(const Job& job, std::size_t e) {
    const Method m = edge_method(job.wf, job.placement, e);
    return m != Method::mpi && m != Method::dsm;
}

bool through_dsm(const Job& job, std::size_t e) {
    return edge_method(job.wf, job.placement, e) == Method::dsm;
}

// The port of producer `t`: its consumers are those on its node reached through the segment.
Result<Port> open_port(const Job& job, Segment& segment, std::size_t t, PortRole role) {
    unsigned consumers = 0;
    for (std::size_t e = 0; e < job.wf.edges.size(); ++e) {
        consumers += job.wf.edges[e].from == job.wf.tasks[t].name && through_port(job, e) ? 1U : 0U;
    }
    return segment.port(job.wf.tasks[t].name, role,
                        {.slots = job.wf.slots,
                         .slot_bytes = port_slot_bytes(job.wf.tasks[t].data_size),
                         .consumers = consumers,
                         // busy-poll spins on zero-timeout calls (shm_ports.hpp); the port itself blocks.
                         .sync = PortSync::blocking});
}

// Where this rank's output goes: consumers by port (on this node), by MPI (ranks and edge tags) or by
// the DSM (edges).
struct Consumers {
    bool by_port = false;
    std::optional<Method> method;  // the producer's own method (copy-into copies, shm does not)
    std::vector<int> mpi_ranks;
    std::vector<int> mpi_tags;
    std::vector<std::size_t> dsm_edges;
};

Consumers consumers_of(const Job& job) {
    Consumers c;
    for (std::size_t e = 0; e < job.wf.edges.size(); ++e) {
        if (job.wf.task_index(job.wf.edges[e].from) != job.rank) {
            continue;
        }
        c.method = job.wf.edges[e].method;
        if (through_port(job, e)) {
            c.by_port = true;
        } else if (through_dsm(job, e)) {
            c.dsm_edges.push_back(e);
        } else {
            c.mpi_ranks.push_back(job.wf.task_index(job.wf.edges[e].to));
            c.mpi_tags.push_back(static_cast<int>(e));
        }
    }
    return c;
}

// The chunks of one edge through the DSM, sent by the producer to the consumer in plan().
struct DsmEdgeChunks {
    dsm::ChunkId data = 0;
    dsm::ChunkId ack = 0;
};

Result<void> check_mpi(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "{}: MPI error {}", what, rc);
    }
    return {};
}

// A nonblocking call's return code `rc`, then its request waited for.
Result<void> post_and_wait(const Job& job, int rc, MPI_Request& request, const std::string& what) {
    if (auto r = check_mpi(rc, what); !r) {
        return r;
    }
    return wait_for(job, request, what);
}

}  // namespace

Result<void> wait_for(const Job& job, MPI_Request& request, const std::string& what) {
    if (job.dsm == nullptr) {
        return check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), what);
    }
    auto pause = std::chrono::microseconds(10);
    for (;;) {
        int done = 0;
        if (auto r = check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what); !r) {
            return r;
        }
        if (done != 0) {
            return {};
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(500));
    }
}

Result<void> barrier(const Job& job, const std::string& what) {
    if (job.dsm == nullptr) {
        return check_mpi(MPI_Barrier(job.comm), what);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    return post_and_wait(job, MPI_Ibarrier(job.comm, &request), request, what);
}

Result<void> reduce(const Job& job, const void* mine, void* all, int count, MPI_Datatype type, MPI_Op op,
                    const std::string& what) {
    if (job.dsm == nullptr) {
        return check_mpi(MPI_Reduce(mine, all, count, type, op, 0, job.comm), what);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    return post_and_wait(job, MPI_Ireduce(mine, all, count, type, op, 0, job.comm, &request), request, what);
}

namespace {

// The producer's side of its edges through the DSM: the data chunk, homed on the node of its first such
// consumer; per consumer an acknowledgement chunk homed on this node, subscribed here; both chunks' ids
// sent to the consumer (tag: the edge).
Result<std::unique_ptr<Sender>> dsm_sender(const Job& job, const std::shared_ptr<DsmMailbox>& mailbox,
                                           const std::vector<std::size_t>& edges) {
    const auto& wf = job.wf;
    const auto self = static_cast<std::size_t>(job.rank);
    const auto node_of = [&](const std::string& task) {
        return static_cast<int>(job.placement.node_of(static_cast<std::size_t>(wf.task_index(task))));
    };
    auto data = job.dsm->allocate(port_slot_bytes(wf.tasks[self].data_size),
                                  dsm::HomePolicy::node(node_of(wf.edges[edges.front()].to)));
    if (!data) {
        return std::unexpected(data.error());
    }
    std::vector<dsm::ChunkId> acks;
    std::vector<std::string> names;
    for (const std::size_t e : edges) {
        auto ack = job.dsm->allocate(sizeof(std::uint64_t), dsm::HomePolicy::node(node_of(wf.tasks[self].name)));
        if (!ack) {
            return std::unexpected(ack.error());
        }
        if (auto r = job.dsm->subscribe(*ack); !r) {
            return std::unexpected(r.error());
        }
        const std::array<std::uint64_t, 2> ids{*data, *ack};
        const int to = wf.task_index(wf.edges[e].to);
        const std::string what = fmt::format("sending edge {}'s DSM chunks to rank {}", e, to);
        MPI_Request request = MPI_REQUEST_NULL;
        if (auto r =
                post_and_wait(job, MPI_Isend(ids.data(), 2, MPI_UINT64_T, to, static_cast<int>(e), job.comm, &request),
                              request, what);
            !r) {
            return std::unexpected(r.error());
        }
        acks.push_back(*ack);
        names.push_back(wf.edges[e].to);
    }
    return std::make_unique<DsmSender>(mailbox, *data, std::move(acks), std::move(names), wf.slots);
}

// The consumer's side of an edge through the DSM: the producer's chunk ids, and the data chunk subscribed
// with its bytes.
Result<std::unique_ptr<InputPort>> dsm_input(const Job& job, const std::shared_ptr<DsmMailbox>& mailbox,
                                             std::size_t e) {
    const int from = job.wf.task_index(job.wf.edges[e].from);
    std::array<std::uint64_t, 2> ids{};
    const std::string what = fmt::format("receiving edge {}'s DSM chunks from rank {}", e, from);
    MPI_Request request = MPI_REQUEST_NULL;
    if (auto r = post_and_wait(
            job, MPI_Irecv(ids.data(), 2, MPI_UINT64_T, from, static_cast<int>(e), job.comm, &request), request, what);
        !r) {
        return std::unexpected(r.error());
    }
    if (auto r = job.dsm->subscribe(ids[0], {.update_on_write = true}); !r) {
        return std::unexpected(r.error());
    }
    const auto size = job.wf.tasks[static_cast<std::size_t>(from)].data_size;
    return std::make_unique<DsmInput>(mailbox, ids[0], ids[1], size / 8, job.wf.edges[e].from);
}

Result<void> add_inputs(const Job& job, Segment* segment, Port::Timeout timeout,
                        const std::shared_ptr<DsmMailbox>& mailbox, TaskIo& io) {
    for (const bool remote : {true, false}) {
        for (std::size_t e = 0; e < job.wf.edges.size(); ++e) {
            const auto& edge = job.wf.edges[e];
            const int from = job.wf.task_index(edge.from);
            if (job.wf.task_index(edge.to) != job.rank || through_port(job, e) == remote) {
                continue;
            }
            const auto size = job.wf.tasks[static_cast<std::size_t>(from)].data_size;
            if (remote && through_dsm(job, e)) {
                auto input = dsm_input(job, mailbox, e);
                if (!input) {
                    return std::unexpected(input.error());
                }
                io.inputs.push_back(std::move(*input));
            } else if (remote) {
                io.inputs.push_back(std::make_unique<MpiInput>(size / 8, from, static_cast<int>(e)));
            } else {
                auto port = open_port(job, *segment, static_cast<std::size_t>(from), PortRole::consumer);
                if (!port) {
                    return std::unexpected(port.error());
                }
                const bool copy_from = edge.method == Method::copy_from || edge.method == Method::copy;
                io.inputs.push_back(std::make_unique<PortInput>(std::move(*port), size, copy_from, timeout,
                                                                job.wf.wait == Wait::busy_poll));
            }
            io.input_edges.push_back(static_cast<int>(e));
            io.input_producers.push_back(from);
        }
    }
    return {};
}

}  // namespace

Result<std::optional<Segment>> open_node_segment(const Job& job, const std::string& base) {
    const auto self = static_cast<std::size_t>(job.rank);
    const std::size_t node = job.placement.node_of(self);
    const std::size_t bytes = segment_bytes_on_node(job.wf, job.placement, node);
    bool first_on_node = true;
    for (std::size_t t = 0; t < self; ++t) {
        first_on_node = first_on_node && job.placement.node_of(t) != node;
    }
    const std::string name = node_segment_name(base, job.placement, node);
    std::optional<Segment> segment;
    Result<void> created;
    if (bytes != 0 && first_on_node) {
        auto r = Segment::open(name, SegmentMode::create_only, bytes);
        if (r) {
            segment.emplace(std::move(*r));
        } else {
            created = std::unexpected(r.error());
        }
    }
    // Every rank joins the barrier, also one whose create failed: the others must not wait for it.
    if (auto r = barrier(job, "the barrier after the node's segment was made"); !r && created) {
        created = r;
    }
    if (!created) {
        return std::unexpected(created.error());
    }
    if (bytes != 0 && !first_on_node) {
        auto r = Segment::open(name, SegmentMode::open_only);
        if (!r) {
            return std::unexpected(r.error());
        }
        segment.emplace(std::move(*r));
    }
    return segment;
}

Result<TaskIo> plan(const Job& job, Segment* segment) {
    const auto ms = handoff_timeout_from_env();
    if (!ms) {
        return std::unexpected(ms.error());
    }
    const Port::Timeout timeout = *ms;
    const auto self = static_cast<std::size_t>(job.rank);
    const Consumers consumers = consumers_of(job);
    std::optional<Port> own_port;
    if (consumers.by_port) {
        auto port = open_port(job, *segment, self, PortRole::producer);
        if (!port) {
            return std::unexpected(port.error());
        }
        own_port.emplace(std::move(*port));
    }
    const std::size_t size = job.wf.tasks[self].data_size;
    std::shared_ptr<DsmMailbox> mailbox;
    if (job.dsm != nullptr) {
        mailbox =
            std::make_shared<DsmMailbox>(*job.dsm, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    }
    // Consumers on other nodes: by MPI, or through the DSM (whose chunk ids go out before the barrier).
    std::unique_ptr<Sender> remote;
    if (!consumers.mpi_ranks.empty()) {
        remote = std::make_unique<MpiSender>(size / 8 + 1, consumers.mpi_ranks, consumers.mpi_tags);
    } else if (!consumers.dsm_edges.empty()) {
        auto sender = dsm_sender(job, mailbox, consumers.dsm_edges);
        if (!sender) {
            return std::unexpected(sender.error());
        }
        remote = std::move(*sender);
    }
    if (auto r = barrier(job, "the barrier after every producer made its outputs"); !r) {
        return std::unexpected(r.error());
    }
    TaskIo io;
    io.task = job.rank;
    io.period_us = job.wf.tasks[self].period_us;
    if (auto r = add_inputs(job, segment, timeout, mailbox, io); !r) {
        return std::unexpected(r.error());
    }
    if (own_port) {
        const bool copy_into = *consumers.method == Method::copy_into || *consumers.method == Method::copy;
        PortOutput local(std::move(*own_port), size, copy_into, timeout, job.wf.wait == Wait::busy_poll);
        if (!remote) {
            io.output = std::make_unique<PortOutput>(std::move(local));
        } else {
            io.output = std::make_unique<PortAndSenderOutput>(std::move(local), std::move(remote));
        }
    } else if (remote) {
        io.output = std::make_unique<SenderOutput>(size / 8, std::move(remote));
    }
    return io;
}

}  // namespace strata::workflow::detail
