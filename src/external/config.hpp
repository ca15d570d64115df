// SPDX-License-Identifier: MIT
// The configuration file of external tasks (docs/external.md): one TOML
// table per program, named as ocrExternalTemplateCreate names it.
//
//   [convert]
//   command = "./convert --in=[in:0] --out=[out:0] --size=[arg:int:1]x[arg:int:1]"
//   timeout = 30            # seconds; none by default
//   env = { OMP_NUM_THREADS = "1" }
//   cwd = "/tmp"
//   stdout = "inherit"      # inherit | null | [out:K] | a file path
//   stderr = "tail"         # tail | inherit | null | [out:K] | a file path
//   exposure = "auto"       # auto | memfd | fuse
//   success_exit_codes = [0]
//   allow_empty_outputs = false
//   unregistered = "error"  # error | temporary: files the program creates
//                           # beside its blocks (FUSE only; docs/external.md)
//   container = "strata"    # run in a crun container: strata's image or a rootfs path
//
// Every error names the file, the line, the entry, the key, the value and the
// cause: "ext.toml:3: entry [convert]: key command: value \"...\": cause".
//
// Thread safety: a loaded Config is immutable; share it freely.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command.hpp"
#include "strata/error.hpp"

namespace strata::external {

/// Where a program's stdout or stderr goes.
struct StreamSpec {
    enum class Target { inherit, null, tail, output, file } target = Target::inherit;
    std::size_t output = 0;  ///< Target::output: the output index
    std::string path;        ///< Target::file: created or truncated before the program starts
};

enum class ExposureChoice { automatic, memfd, fuse };
std::string_view to_string(ExposureChoice choice) noexcept;
/// "auto", "memfd" or "fuse"; nullopt for anything else.
std::optional<ExposureChoice> exposure_choice_of(std::string_view text) noexcept;

/// One program of the file.
struct Entry {
    std::string name;
    std::string file;                                   ///< the configuration file, for messages
    int line = 0;                                       ///< the line of the entry's [name]
    std::map<std::string, int, std::less<>> key_lines;  ///< the line of each key present

    std::string command_text;
    std::vector<Word> command;
    std::vector<std::pair<std::string, std::string>> env;  ///< added to (or replacing in) the runtime's environment
    std::string cwd;                                       ///< empty: the runtime's working directory
    std::optional<std::chrono::milliseconds> timeout;
    StreamSpec stdout_spec;
    StreamSpec stderr_spec{StreamSpec::Target::tail, 0, {}};
    ExposureChoice exposure = ExposureChoice::automatic;  ///< key absent: $STRATA_EXTERNAL_EXPOSURE, else auto
    std::vector<int> success_exit_codes{0};
    bool allow_empty_outputs = false;
    bool temporary_files = false;  ///< unregistered = "temporary": the program may create files under db/
    std::string container;         ///< empty: no container; "strata": the default image; else a rootfs path

    /// "<file>:<line of key>: entry [name]: key <key>: value <value>: " for errors about one key.
    [[nodiscard]] std::string where(std::string_view key, std::string_view value) const;
};

class Config {
public:
    /// Reads and checks the file. Errors (invalid_argument, not_found, ...) name
    /// the file, the line, the entry, the key, the value and the cause.
    static Result<Config> load(const std::filesystem::path& path);
    /// The same for text already read; `source` names it in messages.
    static Result<Config> parse(std::string_view text, std::string_view source);

    /// The entry `name`; not_found (naming the file and the entries it has) if absent.
    [[nodiscard]] Result<const Entry*> find(std::string_view name) const;
    /// Checks the entry's placeholders and stream targets against a template
    /// of n_inputs inputs and n_outputs outputs.
    [[nodiscard]] static Result<void> check(const Entry& entry, std::size_t n_inputs, std::size_t n_outputs);

    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    [[nodiscard]] const std::vector<Entry>& entries() const noexcept { return entries_; }

private:
    std::string source_;
    std::vector<Entry> entries_;
};

}  // namespace strata::external
