// SPDX-License-Identifier: MIT
// Command templates: splitting by the quoting rules of docs/external.md and
// expansion of placeholders, with the expected argv written out by hand.
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "external/command.hpp"
#include "support/result.hpp"

namespace strata::external {
namespace {

using strata::test::fails_with;

// Resolves [in:K] to /in/K, [out:K] to /out/K, [handle:K] to shm:K and [arg:*:K] to argK.
Result<std::string> fake(const Placeholder& p) {
    switch (p.kind) {
        case PlaceholderKind::in: return "/in/" + std::to_string(p.index);
        case PlaceholderKind::out: return "/out/" + std::to_string(p.index);
        case PlaceholderKind::handle: return "shm:" + std::to_string(p.index);
        default: return "arg" + std::to_string(p.index);
    }
}

std::vector<std::string> argv_of(std::string_view text) {
    auto words = split_command(text);
    EXPECT_TRUE(words.has_value()) << (words ? "" : words.error().what());
    if (!words) return {};
    auto argv = expand(*words, fake);
    EXPECT_TRUE(argv.has_value());
    return argv ? *argv : std::vector<std::string>{};
}

TEST(ExternalCommand, the_papers_example_expands_to_its_documented_command) {
    const std::vector<std::string> expected{"./convert",        "--in=/in/0", "--out=/out/0",
                                            "--size=arg1xarg1", "--fast",     "--level=3"};
    EXPECT_EQ(argv_of("./convert --in=[in:0] --out=[out:0]\n--size=[arg:int:1]x[arg:int:1] --fast --level=3"),
              expected);
}

TEST(ExternalCommand, blanks_separate_words_and_runs_of_blanks_make_no_empty_words) {
    EXPECT_EQ(argv_of("  a \t b\n\nc  "), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ExternalCommand, double_quotes_keep_blanks_and_expand_placeholders) {
    EXPECT_EQ(argv_of(R"(prog "a b  [in:2]" "say \"hi\" \\")"),
              (std::vector<std::string>{"prog", "a b  /in/2", "say \"hi\" \\"}));
}

TEST(ExternalCommand, single_quotes_are_literal_even_for_placeholders_and_backslashes) {
    EXPECT_EQ(argv_of(R"(prog '[in:0] \n "x"')"), (std::vector<std::string>{"prog", R"([in:0] \n "x")"}));
}

TEST(ExternalCommand, a_backslash_outside_quotes_makes_the_next_character_literal) {
    EXPECT_EQ(argv_of(R"(prog a\ b \[in:0] \\)"), (std::vector<std::string>{"prog", "a b", "[in:0]", "\\"}));
}

TEST(ExternalCommand, empty_quotes_make_an_empty_word) {
    EXPECT_EQ(argv_of(R"(prog "" '')"), (std::vector<std::string>{"prog", "", ""}));
}

TEST(ExternalCommand, an_expanded_value_with_blanks_stays_one_word) {
    auto words = split_command("prog [arg:str:0]");
    ASSERT_TRUE(words.has_value());
    auto argv =
        expand(*words, [](const Placeholder&) -> Result<std::string> { return std::string("two words; rm -rf /"); });
    ASSERT_TRUE(argv.has_value());
    EXPECT_EQ(*argv, (std::vector<std::string>{"prog", "two words; rm -rf /"}));
}

TEST(ExternalCommand, brackets_that_are_not_placeholders_stay_literal) {
    EXPECT_EQ(argv_of("grep [0-9] [A-Z]x a[1]"), (std::vector<std::string>{"grep", "[0-9]", "[A-Z]x", "a[1]"}));
}

TEST(ExternalCommand, a_handle_placeholder_names_an_input_and_expands_inside_a_word) {
    EXPECT_EQ(argv_of("reader --block=[handle:3] [handle:0]"),
              (std::vector<std::string>{"reader", "--block=shm:3", "shm:0"}));
    auto words = split_command("reader [handle:3]");
    ASSERT_TRUE(words.has_value());
    ASSERT_EQ(placeholders(*words).size(), 1U);
    EXPECT_EQ(placeholders(*words)[0].kind, PlaceholderKind::handle);
    EXPECT_EQ(placeholders(*words)[0].index, 3U);
    EXPECT_TRUE(fails_with(split_command("prog [handle:x]"), Errc::invalid_argument, {"[handle:x]", "not a number"}));
}

TEST(ExternalCommand, an_unknown_placeholder_is_an_error_naming_it) {
    EXPECT_TRUE(fails_with(split_command("prog [inp:0]"), Errc::invalid_argument,
                           {"[inp:0]", "unknown placeholder", "[handle:K]"}));
    EXPECT_TRUE(fails_with(split_command("prog [arg:bool:1]"), Errc::invalid_argument, {"[arg:bool:1]"}));
    EXPECT_TRUE(fails_with(split_command("prog [in:x]"), Errc::invalid_argument, {"[in:x]", "not a number"}));
    EXPECT_TRUE(fails_with(split_command("prog [in:0"), Errc::invalid_argument, {"[in:0", "no closing"}));
}

TEST(ExternalCommand, an_unclosed_quote_or_a_trailing_backslash_is_an_error) {
    EXPECT_TRUE(fails_with(split_command("prog 'abc"), Errc::invalid_argument, {"single quote", "never closed"}));
    EXPECT_TRUE(fails_with(split_command("prog \"abc"), Errc::invalid_argument, {"double quote"}));
    EXPECT_TRUE(fails_with(split_command("prog \\"), Errc::invalid_argument, {"backslash"}));
}

TEST(ExternalCommand, an_empty_command_or_a_computed_program_name_is_an_error) {
    EXPECT_TRUE(fails_with(split_command("   "), Errc::invalid_argument, {"empty"}));
    EXPECT_TRUE(fails_with(split_command("[in:0] x"), Errc::invalid_argument, {"program name", "[in:0]"}));
}

TEST(ExternalCommand, int_arguments_read_binary_4_and_8_byte_blocks_and_decimal_text) {
    const std::int32_t small = -42;
    const std::int64_t big = 1LL << 40;
    EXPECT_EQ(int_argument(&small, sizeof small).value(), "-42");
    EXPECT_EQ(int_argument(&big, sizeof big).value(), "1099511627776");
    const char text[] = " 128\n";
    EXPECT_EQ(int_argument(text, sizeof text).value(), "128");  // with its NUL: 6 bytes
}

TEST(ExternalCommand, a_block_that_is_not_an_integer_is_an_error_naming_its_size) {
    const char text[] = "12x";
    EXPECT_TRUE(fails_with(int_argument(text, 3), Errc::invalid_argument, {"3 bytes", "not an integer"}));
    EXPECT_TRUE(fails_with(int_argument(text, 0), Errc::invalid_argument, {"0 bytes"}));
}

TEST(ExternalCommand, float_and_str_arguments_follow_their_documented_forms) {
    const double d = 2.5;
    const float f = 0.25F;
    EXPECT_EQ(float_argument(&d, sizeof d).value(), "2.5");
    EXPECT_EQ(float_argument(&f, sizeof f).value(), "0.25");
    EXPECT_EQ(float_argument("1e3", 3).value(), "1000");
    EXPECT_TRUE(fails_with(float_argument("abc", 3), Errc::invalid_argument, {"not a number"}));
    const char s[] = "hello\0world";
    EXPECT_EQ(str_argument(s, sizeof s).value(), "hello");
}

TEST(ExternalCommand, shown_commands_quote_what_a_shell_would_split) {
    EXPECT_EQ(show_command({"prog", "a b", "it's", ""}), R"(prog 'a b' 'it'\''s' '')");
}

}  // namespace
}  // namespace strata::external
