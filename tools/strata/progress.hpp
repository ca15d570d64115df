// SPDX-License-Identifier: MIT
// A progress line for a person watching a terminal: one line on stderr,
// redrawn in place with \r and erased before anything else is printed. It is
// never drawn when stderr is not a terminal or when the command was given
// --quiet or --json, so stdout, logs and pipes get exactly what they get
// without it. `strata demo`, `strata run`, `strata bench` and strata-video
// share it (docs/cli.md#progress).
//
//   strata::progress::Line line({.enabled = !options.quiet && !options.json, .prefix = "strata run"});
//   for (...) line.show(done, total, "iterations");   // "strata run [#####     ] 50/100 iterations"
//   line.clear();                                     // before printing the report
//
// Thread safety: every member may be called from any thread.
// Errors: none; a failed write to the terminal is ignored (the line is a courtesy).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace strata::progress {

struct Options {
    bool enabled = true;                 ///< false for --quiet and --json
    std::string prefix;                  ///< the command, e.g. "strata demo"; the line starts with it
    std::chrono::milliseconds delay{0};  ///< draw nothing until this long after construction (strata run: 2 s)
    bool elapsed = false;                ///< end the line with the time since construction ("1:05")
    /// An MPI rank: also draw when stderr is a pipe to MPICH's mpiexec on this node whose own stderr is a
    /// terminal (hydra forwards what the rank writes there).
    bool through_mpiexec = false;
};

class Line {
public:
    explicit Line(Options options);
    ~Line();  ///< erases the line
    Line(const Line&) = delete;
    Line& operator=(const Line&) = delete;

    /// true when the line is drawn at all (a terminal, and enabled).
    [[nodiscard]] bool active() const { return terminal_fd_ >= 0; }

    /// Sets the text after the prefix and draws it: at once when the line is not on the screen, else at
    /// most every 100 ms (the latest text wins; tick() draws what was held back).
    void show(std::string_view text);
    /// show() with a bar: "[#####     ] 50/100 label"; total 0 (unknown): "50 label".
    void show(std::uint64_t done, std::uint64_t total, std::string_view label);
    /// Draws the current text again if 100 ms passed (the elapsed time moves on).
    void tick();
    /// Erases the line; the next show() or tick() draws it again at once.
    void clear();

private:
    void draw();   // mutex_ held
    void erase();  // mutex_ held

    Options options_;
    int terminal_fd_ = -1;  ///< where the terminal's width is read (stderr, or mpiexec's); -1: not drawn
    bool own_fd_ = false;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_draw_{};
    std::string text_;
    std::string drawn_;              ///< the line on the screen
    std::size_t drawn_columns_ = 0;  ///< 0: nothing on the screen
    std::mutex mutex_;
};

/// "[#####     ] 50/100 label" with a bar `width` characters wide; total 0: "50 label".
std::string bar(std::uint64_t done, std::uint64_t total, std::string_view label, int width = 20);
/// `text` cut to at most `columns` characters (UTF-8 sequences kept whole), "..." marking the cut.
std::string fit(std::string_view text, std::size_t columns);
/// The number of characters (UTF-8 code points) of `text`.
std::size_t columns_of(std::string_view text);
/// "0:05", "12:34", "1:02:03".
std::string clock_text(std::chrono::seconds elapsed);

}  // namespace strata::progress
