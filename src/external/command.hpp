// SPDX-License-Identifier: MIT
// Command templates of external tasks: split into words by documented
// quoting rules, then expanded with the task's paths and arguments
// (docs/external.md, "Commands"). No shell is involved at any step.
//
// Rules: words are separated by unquoted blanks (space, tab, newline);
// '...' is literal (no placeholders, no escapes); "..." keeps blanks and
// treats \" and \\ as escapes; outside quotes a backslash makes the next
// character literal. A '[' followed by lowercase letters and ':' starts a
// placeholder: [in:K], [out:K], [handle:K], [arg:int:K], [arg:str:K],
// [arg:float:K]; any other such name is an error. An expanded value stays one word (or part
// of one): it is never split again.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"

namespace strata::external {

/// in: input K's path; out: output K's path; handle: input K's shm handle
/// (a shared data block, no file); arg_*: input K's bytes as an argument.
enum class PlaceholderKind { in, out, handle, arg_int, arg_str, arg_float };

struct Placeholder {
    PlaceholderKind kind = PlaceholderKind::in;
    std::size_t index = 0;
    std::string text;  ///< as written, "[arg:int:1]"
};

/// A piece of a word: literal text, or a placeholder when is_placeholder.
struct WordPart {
    bool is_placeholder = false;
    std::string literal;
    Placeholder placeholder;
};

using Word = std::vector<WordPart>;

/// Splits `text`; errors (invalid_argument) say what is wrong and quote the offending text.
Result<std::vector<Word>> split_command(std::string_view text);

/// Every placeholder of the words, in order.
std::vector<Placeholder> placeholders(const std::vector<Word>& words);

/// Gives the text of one placeholder (a path, or an argument's value).
using Resolver = std::function<Result<std::string>(const Placeholder&)>;

/// The argv of one task: each word's parts concatenated, placeholders resolved.
Result<std::vector<std::string>> expand(const std::vector<Word>& words, const Resolver& resolve);

/// The text of a block for [arg:int:K]: 4 or 8 bytes are a native s32/s64,
/// other sizes decimal text (blanks and NULs around it ignored).
Result<std::string> int_argument(const void* data, std::size_t size);
/// [arg:float:K]: 4 or 8 bytes are a native float/double, other sizes decimal text.
Result<std::string> float_argument(const void* data, std::size_t size);
/// [arg:str:K]: the bytes up to the first NUL.
Result<std::string> str_argument(const void* data, std::size_t size);

/// argv as one line, each word quoted when needed (for logs).
std::string show_command(const std::vector<std::string>& argv);

}  // namespace strata::external
