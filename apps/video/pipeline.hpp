// The implementations of the pipeline, one entry point each; each returns the
// process's exit code (0 done, 1 the job failed: the error is printed).
#pragma once

#include "options.hpp"

namespace strata::video {

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
