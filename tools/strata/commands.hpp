// SPDX-License-Identifier: MIT
// Entry points of the `strata` subcommands; each lives in its own file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace strata::cli {

struct DemoOptions {
    std::string dir;  ///< where storage files go; a fresh directory under /var/tmp by default
    bool json = false;
    bool quiet = false;             ///< no progress line
    std::vector<std::string> only;  ///< sections to run (demo_sections()); empty: all
    bool flagship = false;          ///< `strata demo flagship`: the flagship alone, at its larger size
};
/// The names of the demo's sections, in the order they run.
const std::vector<std::string>& demo_sections();
/// `strata demo`: a short tour of every capability that exists; exit code.
int run_demo(const DemoOptions& options);

/// `strata bench <suite> [args...]`: runs <bench dir>/<suite>/run (tools/strata/paths.hpp); exit code.
/// On a terminal and without `quiet`, it watches the suite and shows its progress (bench_watch.cpp).
int run_bench(const std::string& suite, const std::vector<std::string>& args, bool quiet);
/// `strata bench --list [--json]`: one line (or JSON object) per suite, its name and what it measures; exit code.
int list_bench_suites(bool json);

/// Options of `strata ocr`; each sets the environment variable libstrata-ocr reads.
struct OcrOptions {
    std::string monitor;            ///< STRATA_MONITOR: auto, ebpf, proc, off
    std::string cpus;               ///< STRATA_CPUS: "0-3,6"
    std::string workers;            ///< STRATA_WORKERS: a count, more than the CPUs allowed
    std::string db_placement;       ///< STRATA_OCR_DB_PLACEMENT: memory, shared, storage
    std::string db_dir;             ///< STRATA_OCR_DB_DIR
    bool stats = false;             ///< STRATA_STATS=1
    bool verbose = false;           ///< STRATA_VERBOSE=1
    std::string external_config;    ///< STRATA_EXTERNAL_CONFIG: checked before the program starts
    std::string external_exposure;  ///< STRATA_EXTERNAL_EXPOSURE: auto, memfd, fuse
    int ranks = 0;                  ///< -n: run the program on that many ranks through mpiexec
};
/// `strata ocr`: strata's options end at the first non-option (the program
/// path) or at `--`, as with mpiexec and env. When argv is an `ocr` command,
/// moves everything from there on into `command` and returns the argc that
/// CLI11 parses (the options only); otherwise returns argc unchanged.
int split_ocr_command(const CLI::App& ocr_cmd, int argc, char** argv, std::vector<std::string>& command);
/// `strata ocr [options] ./program args...`: runs the OCR program in place of
/// this process (exec); returns only when it cannot be run (127 or 126), or 2
/// for a usage error. With -n N > 1: runs mpiexec as a child, as the job
/// STRATA_OCR_JOB, removes the segments its ranks left, and returns mpiexec's
/// exit code (or ends by the signal that ended mpiexec). `command` is everything from the first non-option on,
/// passed to the program untouched (a leading `--` is dropped).
int run_ocr_program(const OcrOptions& options, std::vector<std::string> command);

/// Options of `strata run`: a workflow file, or a generated shape.
struct RunOptions {
    std::string file;   ///< workflow file; or a generated shape:
    std::string shape;  ///< simple | pipeline | scatter-gather
    std::size_t tasks = 4;
    std::string data_size = "10MB";
    std::string method = "shm";
    std::string wait = "blocking";
    std::uint64_t iterations = 0;  ///< 0: the file's (or 100 for a shape)
    std::string write;             ///< write the workflow file here instead of running it
    std::string mpiexec;           ///< split at blanks; empty: $STRATA_EMU_MPIEXEC with a placement inside
                                   ///< apps/video/emulate, else the mpiexec strata was built with
    std::string nodes;             ///< placement: tasks in blocks over these nodes (comma-separated)
    std::string hosts;             ///< placement: a hosts file (docs/workflow.md, "Placement")
    std::string across = "mpi";    ///< with a placement: edges across nodes run as mpi or dsm
    bool json = false;
    bool quiet = false;  ///< no progress line
};
/// `strata run WORKFLOW.toml`: runs a synthetic workflow and reports throughput and latency; exit code.
int run_workflow(const RunOptions& options);

/// Options of `strata container run`.
struct ContainerOptions {
    std::string rootfs;                                    ///< empty: the image of scripts/container-image
    std::string strata_root;                               ///< bound at /opt/strata; empty: this strata's tree
    std::string segment_dir;                               ///< empty: $STRATA_SHM_DIR or /dev/shm/strata-<euid>
    std::string cwd;                                       ///< inside the container; empty: /
    std::vector<std::pair<std::string, std::string>> env;  ///< --env NAME=VALUE
    std::vector<std::string> command;                      ///< the program and its arguments
};
/// `strata container run`: the program in a crun container; its exit code (128+N: killed by signal N).
int run_container(const ContainerOptions& options);

/// Options of `strata shm ls|gc`.
struct ShmOptions {
    std::string dir;  ///< segment directory; empty: $STRATA_SHM_DIR or /dev/shm
    std::string
        ocr_db_dir;  ///< gc: where dead OCR runs' data-block directories are; empty: $STRATA_OCR_DB_DIR or /var/tmp
    bool json = false;
};
/// `strata shm ls`: segments with size, users alive and age; exit code.
int run_shm_ls(const ShmOptions& options);
/// `strata shm gc`: removes segments whose users all died, and the storage
/// data-block directories of OCR runs that died; exit code.
int run_shm_gc(const ShmOptions& options);

/// Options of `strata fs mount|ls|umount` (strata-fsd mounts, docs/external-fs.md).
struct FsOptions {
    std::string mount_point;  ///< umount: the mount to remove
    bool all = false;         ///< umount: every strata-fsd mount
    bool json = false;
};
/// `strata fs mount`: starts a strata-fsd without an owner; prints its mount point.
int run_fs_mount(const FsOptions& options);
/// `strata fs ls`: lists strata-fsd mounts, removing those whose daemon died.
int run_fs_ls(const FsOptions& options);
/// `strata fs umount MOUNT|--all`: stops the daemon and unmounts.
int run_fs_umount(const FsOptions& options);

}  // namespace strata::cli
