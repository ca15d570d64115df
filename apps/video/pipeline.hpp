// SPDX-License-Identifier: MIT
// The implementations of the pipeline, one entry point each; each returns the
// process's exit code (0 done, 1 the job failed: the error is printed).
#pragma once

#include "options.hpp"

namespace strata::video {

/// The rank layout of the MPI and ZeroMQ pipelines (the DSM's servers come first, see dsm_pipeline.cpp).
constexpr int input_rank = 0;
constexpr int output_rank = 1;
constexpr int first_worker_rank = 2;

/// One process: decode, filter, encode in a loop.
int run_serial(const Options& options);
/// mpi-sync, mpi-async, mpi-async-multi (mpi_pipeline.cpp).
int run_mpi(const Options& options);
/// zmq, zmq-credit (zmq_pipeline.cpp).
int run_zmq(const Options& options);
/// dsm, dsm-acquire (dsm_pipeline.cpp).
int run_dsm(const Options& options);
/// --kernel-time WxH: the kernel's median time on one frame, as JSON on stdout.
int run_kernel_time(const Options& options);

}  // namespace strata::video
