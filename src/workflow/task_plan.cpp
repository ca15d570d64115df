// SPDX-License-Identifier: MIT
#include "task_plan.hpp"

#include <mpi.h>

#include "mpi_ports.hpp"
#include "shm_ports.hpp"

namespace strata::workflow::detail {

namespace {

bool through_port(const Job& job, std::size_t e) {
    return edge_method(job.wf, job.placement, e) != Method::mpi;
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

// Where this rank's output goes: consumers by port (on this node) and by MPI (ranks and edge tags).
struct Consumers {
    bool by_port = false;
    std::optional<Method> method;  // the producer's own method (copy-into copies, shm does not)
    std::vector<int> mpi_ranks;
    std::vector<int> mpi_tags;
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
        } else {
            c.mpi_ranks.push_back(job.wf.task_index(job.wf.edges[e].to));
            c.mpi_tags.push_back(static_cast<int>(e));
        }
    }
    return c;
}

Result<void> add_inputs(const Job& job, Segment* segment, Port::Timeout timeout, TaskIo& io) {
    for (const bool by_mpi : {true, false}) {
        for (std::size_t e = 0; e < job.wf.edges.size(); ++e) {
            const auto& edge = job.wf.edges[e];
            const int from = job.wf.task_index(edge.from);
            if (job.wf.task_index(edge.to) != job.rank || through_port(job, e) == by_mpi) {
                continue;
            }
            const auto size = job.wf.tasks[static_cast<std::size_t>(from)].data_size;
            if (by_mpi) {
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
    MPI_Barrier(MPI_COMM_WORLD);
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
    MPI_Barrier(MPI_COMM_WORLD);
    TaskIo io;
    io.task = job.rank;
    io.period_us = job.wf.tasks[self].period_us;
    if (auto r = add_inputs(job, segment, timeout, io); !r) {
        return std::unexpected(r.error());
    }
    const std::size_t size = job.wf.tasks[self].data_size;
    if (own_port) {
        const bool copy_into = *consumers.method == Method::copy_into || *consumers.method == Method::copy;
        PortOutput local(std::move(*own_port), size, copy_into, timeout, job.wf.wait == Wait::busy_poll);
        if (consumers.mpi_ranks.empty()) {
            io.output = std::make_unique<PortOutput>(std::move(local));
        } else {
            io.output =
                std::make_unique<PortAndMpiOutput>(std::move(local), size / 8, consumers.mpi_ranks, consumers.mpi_tags);
        }
    } else if (!consumers.mpi_ranks.empty()) {
        io.output = std::make_unique<MpiOutput>(size / 8, consumers.mpi_ranks, consumers.mpi_tags);
    }
    return io;
}

}  // namespace strata::workflow::detail
