// SPDX-License-Identifier: MIT
// strata-video: paper 003's video pipeline (docs/video.md).
//
//   mpiexec -n 5 strata-video --impl mpi-async -i in.mkv -o out.mkv --codec ffv1
//   strata-video --impl serial -i in.mkv -o out.raw
//   strata-video --kernel-time 1920x1080
//
// Exit codes: 0 done, 1 the job failed (every surviving rank says why), 2 bad arguments.
#include "options.hpp"
#include "pipeline.hpp"

int main(int argc, char** argv) {
    using namespace strata::video;
    Options options;
    switch (parse_options(argc, argv, options)) {
        case ParseOutcome::exit_ok: return 0;
        case ParseOutcome::exit_error: return 2;
        case ParseOutcome::run: break;
    }
    if (!options.kernel_time.empty()) return run_kernel_time(options);
    switch (options.impl) {
        case Impl::serial: return run_serial(options);
        case Impl::mpi_sync:
        case Impl::mpi_async:
        case Impl::mpi_async_multi: return run_mpi(options);
        case Impl::zmq:
        case Impl::zmq_credit: return run_zmq(options);
        case Impl::dsm:
        case Impl::dsm_acquire: return run_dsm(options);
    }
    return 2;
}
