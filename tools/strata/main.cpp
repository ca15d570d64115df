// SPDX-License-Identifier: MIT
// The `strata` command: one binary, one subcommand per capability.
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "completion.hpp"
#include "doctor/doctor.hpp"
#include "strata/version.hpp"

int main(int argc, char** argv) {
    CLI::App app{"strata: one runtime for the data of HPC tasks and workflows", "strata"};
    app.set_version_flag("-V,--version", fmt::format("strata {}", strata::version_string));
    app.require_subcommand(1);

    strata::doctor::Options doctor;
    auto* doctor_cmd =
        app.add_subcommand("doctor", "Probe every capability strata uses and say how to fix what is missing");
    doctor_cmd->add_flag("--json", doctor.json, "Print one JSON document instead of the table");

    strata::cli::DemoOptions demo;
    auto* demo_cmd = app.add_subcommand("demo", "A short tour of every capability on small data, with a report");
    demo_cmd->add_option("--dir", demo.dir, "Directory for storage files (default: a fresh one under /var/tmp)");
    demo_cmd->add_flag("--json", demo.json, "Print the report as JSON");
    demo_cmd->add_flag("--quiet,-q", demo.quiet,
                       "No progress line (it is shown only when stderr is a terminal, and never with --json)");
    demo_cmd->add_option("--only", demo.only, "Run only these sections (comma-separated; default: all)")
        ->delimiter(',')
        ->check(CLI::IsMember(strata::cli::demo_sections()));
    std::string demo_what;
    demo_cmd
        ->add_option("what", demo_what,
                     "flagship: only the flagship workflow, at a larger size (docs/getting-started/flagship.md)")
        ->check(CLI::IsMember({"flagship"}));

    std::string suite;
    bool bench_list = false;
    auto* bench_cmd = app.add_subcommand(
        "bench",
        "Run a benchmark suite; its report goes to --out DIR (default: docs/benchmarks/<suite> in a source tree, "
        "else ./strata-bench-<suite>)");
    bool bench_json = false;
    bench_cmd->add_flag("--list", bench_list, "List the suites and what each measures");
    bench_cmd->add_flag("--json", bench_json, "With --list: print JSON");
    bool bench_quiet = false;
    bench_cmd->add_flag("--quiet,-q", bench_quiet,
                        "No progress line (it is shown only when stderr is a terminal); give it before SUITE");
    bench_cmd->add_option("suite", suite, "Suite to run (see --list); `strata bench <suite> --help` gives its options");
    // Everything after the suite name goes to the suite unparsed (see `strata bench <suite> --help`).
    bench_cmd->prefix_command();

    strata::cli::OcrOptions ocr;
    auto* ocr_cmd = app.add_subcommand("ocr", "Run an OCR program (linked with -lstrata-ocr) on strata's runtime");
    ocr_cmd->add_option("--monitor", ocr.monitor,
                        "Blocking monitor: auto, ebpf, proc or off (default: $STRATA_MONITOR, else auto)");
    ocr_cmd->add_option(
        "--cpus", ocr.cpus,
        "CPUs to run workers on, e.g. 0-3,6 (default: $STRATA_CPUS, else every CPU the process may use)");
    ocr_cmd->add_option("--workers", ocr.workers,
                        "Workers that run EDTs side by side (ocrNbWorkers), more than the CPUs if asked: they then "
                        "share cores (default: $STRATA_WORKERS, else the program's -ocr:cfg file or $OCR_CONFIG, else "
                        "one per CPU)");
    ocr_cmd->add_option("--db-placement", ocr.db_placement,
                        "Where data blocks live unless a hint says: memory, shared or storage (default: "
                        "$STRATA_OCR_DB_PLACEMENT, else memory)");
    ocr_cmd->add_option("--db-dir", ocr.db_dir,
                        "Directory of storage data blocks (default: $STRATA_OCR_DB_DIR, else /var/tmp)");
    ocr_cmd->add_flag("--stats", ocr.stats, "Print per-core statistics at exit (STRATA_STATS=1)");
    ocr_cmd->add_flag("--verbose", ocr.verbose, "Say which monitor runs and why (STRATA_VERBOSE=1)");
    ocr_cmd->add_option("--external-config", ocr.external_config,
                        "TOML file of external programs (docs/external.md), checked first (default: "
                        "$STRATA_EXTERNAL_CONFIG, else none)");
    ocr_cmd
        ->add_option("-n,--ranks", ocr.ranks,
                     "Run on N ranks, one policy domain each, through mpiexec ($STRATA_MPIEXEC, else mpiexec) "
                     "(docs/runtime.md, Distributed OCR); default 1: one process, no MPI")
        ->check(CLI::Range(1, 4096));
    ocr_cmd->add_option("--external-exposure", ocr.external_exposure,
                        "How external programs see data blocks when an entry does not say: auto, memfd or fuse "
                        "(default: $STRATA_EXTERNAL_EXPOSURE, else auto)");
    // strata's options end at the first non-option (the program path), as with
    // mpiexec and env: split_ocr_command hands the program its arguments untouched.
    strata::cli::RunOptions run;
    auto* run_cmd = app.add_subcommand("run", "Run a synthetic workflow (docs/workflow.md) and report its throughput");
    run_cmd->add_option("workflow", run.file, "Workflow file (examples/workflows/*.toml)");
    run_cmd->add_option(
        "--shape", run.shape,
        "Generate a workflow instead of reading one: simple, pipeline or scatter-gather (default: none)");
    run_cmd->add_option("--tasks", run.tasks, "Tasks of a generated pipeline or scatter-gather")->capture_default_str();
    run_cmd->add_option("--data-size", run.data_size, "Data per producer of a generated workflow")
        ->capture_default_str();
    run_cmd->add_option("--method", run.method, "Method of a generated workflow's edges")->capture_default_str();
    run_cmd->add_option("--wait", run.wait, "How a generated workflow waits: blocking or busy-poll")
        ->capture_default_str();
    run_cmd->add_option("--iterations", run.iterations, "Override the iterations (default: the file's; 100)");
    run_cmd->add_option("--write", run.write, "Write the workflow file here instead of running it (default: run it)");
    run_cmd->add_option("--mpiexec", run.mpiexec,
                        "mpiexec to start the tasks with, split at blanks (default: $STRATA_EMU_MPIEXEC with "
                        "--nodes/--hosts inside apps/video/emulate, else " STRATA_MPIEXEC ")");
    auto* nodes_opt = run_cmd->add_option(
        "--nodes", run.nodes,
        "Placement: split the tasks, in file order, into blocks over these nodes (host or emulated node names, "
        "comma-separated); edges across nodes go by MPI unless --across says otherwise (default: every task on "
        "this node)");
    run_cmd
        ->add_option("--hosts", run.hosts,
                     "Placement from a hosts file: lines of NODE [TASK...] (docs/workflow.md; default: every task on "
                     "this node)")
        ->excludes(nodes_opt);
    run_cmd
        ->add_option("--across", run.across,
                     "How edges across nodes run with a placement: mpi, or dsm (the strata DSM, a server per node)")
        ->capture_default_str();
    run_cmd->add_flag("--json", run.json, "Print the report as JSON");
    run_cmd->add_flag("--quiet,-q", run.quiet,
                      "No progress line (shown after 2 s only when stderr is a terminal, and never with --json)");

    strata::cli::ShmOptions shm;
    auto* shm_cmd = app.add_subcommand("shm", "Shared-object segments: list them, remove those whose users died");
    shm_cmd->require_subcommand(1);
    auto* shm_ls_cmd = shm_cmd->add_subcommand("ls", "List segments: size, users alive, age");
    auto* shm_gc_cmd = shm_cmd->add_subcommand("gc", "Remove segments whose users are all dead (never one in use)");
    shm_gc_cmd->add_option("--ocr-db-dir", shm.ocr_db_dir,
                           "Where OCR runs keep storage data blocks: the directories of dead runs are removed "
                           "(default: $STRATA_OCR_DB_DIR or /var/tmp)");
    for (auto* cmd : {shm_ls_cmd, shm_gc_cmd}) {
        cmd->add_option("--dir", shm.dir, "Segment directory (default: $STRATA_SHM_DIR or /dev/shm)");
        cmd->add_flag("--json", shm.json, "Print JSON");
    }

    strata::cli::ContainerOptions container;
    std::vector<std::string> container_env;
    auto* container_cmd =
        app.add_subcommand("container", "Real containers (crun) sharing the segment directory (docs/shm.md)");
    container_cmd->require_subcommand(1);
    auto* container_run_cmd = container_cmd->add_subcommand(
        "run", "Run a program in a crun container with the segment directory and strata bound in");
    container_run_cmd->add_option("--rootfs", container.rootfs,
                                  "Root file system (default: $STRATA_CONTAINER_ROOTFS or the image of "
                                  "scripts/container-image)");
    container_run_cmd->add_option("--strata-root", container.strata_root,
                                  "strata tree bound at /opt/strata (default: this strata's)");
    container_run_cmd->add_option("--segment-dir", container.segment_dir,
                                  "Segment directory bound in (default: $STRATA_SHM_DIR or /dev/shm/strata-<uid>)");
    container_run_cmd->add_option("--cwd", container.cwd, "Working directory inside the container (default: /)");
    container_run_cmd->add_option("--env", container_env, "NAME=VALUE for the program (repeatable; default: none)");
    container_run_cmd->add_option("command", container.command, "-- PROGRAM ARGS...");

    strata::cli::FsOptions fs;
    auto* fs_cmd = app.add_subcommand("fs", "strata-fsd mounts (data blocks as files): mount, list, unmount");
    fs_cmd->require_subcommand(1);
    auto* fs_mount_cmd = fs_cmd->add_subcommand("mount", "Start a strata-fsd without an owner; print its mount point");
    auto* fs_ls_cmd = fs_cmd->add_subcommand("ls", "List strata-fsd mounts; remove those whose daemon died");
    auto* fs_umount_cmd = fs_cmd->add_subcommand("umount", "Stop a strata-fsd and unmount it");
    fs_umount_cmd->add_option("mount_point", fs.mount_point, "The mount point (see strata fs ls)");
    fs_umount_cmd->add_flag("--all", fs.all, "Every strata-fsd mount");
    for (auto* cmd : {fs_mount_cmd, fs_ls_cmd}) {
        cmd->add_flag("--json", fs.json, "Print JSON");
    }

    // `strata bench SUITE ARGS...`: everything after the suite is the suite's,
    // --help included (CLI11 would take that --help for `strata bench`).
    if (argc >= 3 && std::string_view(argv[1]) == "bench" && argv[2][0] != '-') {
        return strata::cli::run_bench(argv[2], std::vector<std::string>(argv + 3, argv + argc), false);
    }
    auto* completion_cmd = app.add_subcommand(
        "completion", "Print a shell completion script (bash, zsh or fish) generated from these commands");
    std::string shell = "bash";
    completion_cmd->add_option("shell", shell, "Shell to complete for")
        ->check(CLI::IsMember(strata::cli::completion_shells()))
        ->capture_default_str();

    app.footer(
        "Exit codes: 0 success (and --help, --version), 1 failure, 2 usage error; `strata ocr` and `strata bench "
        "SUITE` exit with the program's or the suite's code. `strata COMMAND --help` lists a command's options "
        "with their defaults (docs/cli.md).");

    ocr_cmd->footer(
        "Usage: strata ocr [OPTIONS] PROGRAM [ARGS...]: strata's options end at PROGRAM, which gets ARGS untouched.\n"
        "Exit codes: PROGRAM's own; 2 usage error (before PROGRAM starts); 126 PROGRAM cannot be executed, 127 not "
        "found (as a shell) (docs/cli.md).");
    // Every command's --help says what its exit status means (docs/cli.md).
    for (auto* cmd : {doctor_cmd, demo_cmd, bench_cmd, run_cmd, shm_cmd, shm_ls_cmd, shm_gc_cmd, fs_cmd, fs_mount_cmd,
                      fs_ls_cmd, fs_umount_cmd, completion_cmd, container_cmd}) {
        cmd->footer("Exit codes: 0 success, 1 failure, 2 usage error (docs/cli.md).");
    }
    container_run_cmd->footer(
        "Exit codes: PROGRAM's own (128+N when killed by signal N); 1 the container could not be made (no crun, no "
        "image, not root); 2 usage error (docs/cli.md).");
    bench_cmd->footer(
        "Exit codes: 0 success, 1 failure, 2 usage error (an unknown suite or option); `strata bench SUITE` exits "
        "with the suite's code (docs/cli.md).");

    std::vector<std::string> ocr_command;
    argc = strata::cli::split_ocr_command(*ocr_cmd, argc, argv, ocr_command);
    // Exit codes (docs/cli.md): 0 success, 1 failure, 2 usage
    // error; --help and --version exit 0. CLI11's own codes (105, 106, ...) become 2.
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }

    if (*completion_cmd) {
        fmt::print("{}", strata::cli::completion_script(app, shell));
        return 0;
    }
    if (*doctor_cmd) {
        return strata::doctor::run(doctor);
    }
    if (*demo_cmd) {
        if (demo_what == "flagship") {
            demo.flagship = true;
            demo.only = {"flagship"};
        }
        return strata::cli::run_demo(demo);
    }
    if (*bench_cmd) {
        if (bench_list) {
            return strata::cli::list_bench_suites(bench_json);
        }
        if (suite.empty()) {
            const auto rest = bench_cmd->remaining();
            if (!rest.empty()) {
                fmt::print(stderr, "strata bench: {}: unknown option (see strata bench --help)\n", rest.front());
            } else {
                fmt::print(stderr, "strata bench: give a suite (strata bench --list) or --list\n");
            }
            return 2;
        }
        return strata::cli::run_bench(suite, bench_cmd->remaining(), bench_quiet);
    }
    if (*ocr_cmd) {
        return strata::cli::run_ocr_program(ocr, ocr_command);
    }
    if (*shm_ls_cmd) {
        return strata::cli::run_shm_ls(shm);
    }
    if (*shm_gc_cmd) {
        return strata::cli::run_shm_gc(shm);
    }
    if (*container_run_cmd) {
        for (const auto& e : container_env) {
            const auto eq = e.find('=');
            if (eq == std::string::npos || eq == 0) {
                fmt::print(stderr, "strata container run: --env {}: expected NAME=VALUE\n", e);
                return 2;
            }
            container.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
        }
        return strata::cli::run_container(container);
    }
    if (*fs_mount_cmd) {
        return strata::cli::run_fs_mount(fs);
    }
    if (*fs_ls_cmd) {
        return strata::cli::run_fs_ls(fs);
    }
    if (*fs_umount_cmd) {
        return strata::cli::run_fs_umount(fs);
    }
    if (*run_cmd) {
        return strata::cli::run_workflow(run);
    }
    return 2;
}
