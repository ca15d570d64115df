// SPDX-License-Identifier: MIT
// The configuration file: every error names the file, the line, the entry,
// the key, the value and the cause; good files give the documented values.
#include <gtest/gtest.h>

#include "external/config.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace strata::external {
namespace {

using strata::test::fails_with;

TEST(ExternalConfig, a_full_entry_reads_every_key) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse(R"(
[convert]
command = "./convert --in=[in:0] --out=[out:0] --size=[arg:int:1]x[arg:int:1]"
env = { OMP_NUM_THREADS = "1", LANG = "C" }
cwd = "/tmp"
timeout = 2.5
stdout = "[out:1]"
stderr = "/tmp/convert.log"
exposure = "memfd"
success_exit_codes = [0, 3]
allow_empty_outputs = true
)",
                                            "ext.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("convert"));
    EXPECT_EQ(entry->line, 2);
    EXPECT_EQ(entry->command.size(), 4U);
    EXPECT_EQ(entry->env, (std::vector<std::pair<std::string, std::string>>{{"LANG", "C"}, {"OMP_NUM_THREADS", "1"}}));
    EXPECT_EQ(entry->cwd, "/tmp");
    EXPECT_EQ(entry->timeout, std::chrono::milliseconds(2500));
    EXPECT_EQ(entry->stdout_spec.target, StreamSpec::Target::output);
    EXPECT_EQ(entry->stdout_spec.output, 1U);
    EXPECT_EQ(entry->stderr_spec.target, StreamSpec::Target::file);
    EXPECT_EQ(entry->stderr_spec.path, "/tmp/convert.log");
    EXPECT_EQ(entry->exposure, ExposureChoice::memfd);
    EXPECT_EQ(entry->success_exit_codes, (std::vector<int>{0, 3}));
    EXPECT_TRUE(entry->allow_empty_outputs);
    STRATA_EXPECT_OK(Config::check(*entry, 2, 2));
}

TEST(ExternalConfig, defaults_are_inherit_stdout_tail_stderr_auto_and_exit_code_zero) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[t]\ncommand = \"true\"\n", "d.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("t"));
    EXPECT_EQ(entry->stdout_spec.target, StreamSpec::Target::inherit);
    EXPECT_EQ(entry->stderr_spec.target, StreamSpec::Target::tail);
    EXPECT_EQ(entry->exposure, ExposureChoice::automatic);
    EXPECT_EQ(entry->success_exit_codes, std::vector<int>{0});
    EXPECT_FALSE(entry->timeout.has_value());
    EXPECT_FALSE(entry->allow_empty_outputs);
}

TEST(ExternalConfig, an_unknown_entry_names_the_file_and_the_entries_it_has) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[a]\ncommand = \"true\"\n[b]\ncommand = \"false\"\n", "e.toml"));
    EXPECT_TRUE(fails_with(sut.find("convert"), Errc::not_found, {"e.toml", "[convert]", "unknown entry", "a, b"}));
}

TEST(ExternalConfig, an_unknown_placeholder_names_file_line_entry_key_value_and_cause) {
    EXPECT_TRUE(fails_with(
        Config::parse("\n\n[conv]\n\ncommand = \"prog [inn:0]\"\n", "p.toml"), Errc::invalid_argument,
        {"p.toml:5:", "entry [conv]", "key command", "value \"prog [inn:0]\"", "unknown placeholder", "[inn:0]"}));
}

TEST(ExternalConfig, an_input_index_beyond_the_template_names_the_placeholder_and_the_count) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[conv]\ncommand = \"prog [in:0] [in:2] [out:0]\"\n", "i.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("conv"));
    EXPECT_TRUE(fails_with(Config::check(*entry, 2, 1), Errc::invalid_argument,
                           {"i.toml:2:", "entry [conv]", "key command", "prog [in:0] [in:2] [out:0]", "[in:2]",
                            "beyond the template's 2 inputs"}));
    STRATA_EXPECT_OK(Config::check(*entry, 3, 1));
}

TEST(ExternalConfig, an_output_index_beyond_the_template_is_an_error) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[conv]\ncommand = \"prog [out:1]\"\n", "o.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("conv"));
    EXPECT_TRUE(fails_with(Config::check(*entry, 0, 1), Errc::invalid_argument,
                           {"o.toml:2:", "[out:1]", "beyond the template's 1 output"}));
}

TEST(ExternalConfig, an_arg_placeholder_counts_against_the_inputs) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[c]\ncommand = \"prog [arg:int:1]\"\n", "a.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("c"));
    EXPECT_TRUE(fails_with(Config::check(*entry, 1, 0), Errc::invalid_argument, {"[arg:int:1]", "1 input"}));
}

TEST(ExternalConfig, a_stream_to_an_output_beyond_the_template_is_an_error) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[c]\ncommand = \"prog\"\nstdout = \"[out:3]\"\n", "s.toml"));
    STRATA_ASSERT_ASSIGN(entry, sut.find("c"));
    EXPECT_TRUE(fails_with(Config::check(*entry, 0, 1), Errc::invalid_argument,
                           {"s.toml:3:", "key stdout", "[out:3]", "beyond"}));
}

TEST(ExternalConfig, an_unknown_key_is_an_error_naming_it_and_the_known_ones) {
    EXPECT_TRUE(fails_with(Config::parse("[c]\ncommand = \"prog\"\ntimout = 3\n", "k.toml"), Errc::invalid_argument,
                           {"k.toml:3:", "entry [c]", "key timout", "value 3", "unknown key", "timeout"}));
}

TEST(ExternalConfig, unregistered_temporary_lets_the_program_create_files_and_error_is_the_default) {
    STRATA_ASSERT_ASSIGN(sut, Config::parse("[a]\ncommand = \"p\"\nunregistered = \"temporary\"\n"
                                            "[b]\ncommand = \"p\"\nunregistered = \"error\"\n[c]\ncommand = \"p\"\n",
                                            "u.toml"));
    STRATA_ASSERT_ASSIGN(a, sut.find("a"));
    STRATA_ASSERT_ASSIGN(b, sut.find("b"));
    STRATA_ASSERT_ASSIGN(c, sut.find("c"));
    EXPECT_TRUE(a->temporary_files);
    EXPECT_FALSE(b->temporary_files);
    EXPECT_FALSE(c->temporary_files);
}

TEST(ExternalConfig, a_missing_command_is_an_error) {
    EXPECT_TRUE(fails_with(Config::parse("[c]\ncwd = \"/\"\n", "m.toml"), Errc::invalid_argument,
                           {"m.toml:1:", "entry [c]", "key command", "missing"}));
}

TEST(ExternalConfig, values_of_the_wrong_type_or_range_are_errors) {
    struct Case {
        const char* text;
        std::vector<std::string_view> mentions;
    };
    const std::vector<Case> cases{
        {"[c]\ncommand = 3\n", {"c.toml:2:", "key command", "value 3", "not a string"}},
        {"[c]\ncommand = \"p\"\ntimeout = -1\n", {"c.toml:3:", "key timeout", "value -1", "seconds"}},
        {"[c]\ncommand = \"p\"\ntimeout = \"5s\"\n", {"key timeout", "5s"}},
        {"[c]\ncommand = \"p\"\nexposure = \"nfs\"\n", {"c.toml:3:", "key exposure", "\"nfs\"", "auto, memfd or fuse"}},
        {"[c]\ncommand = \"p\"\nstdout = \"tail\"\n", {"key stdout", "\"tail\"", "expected"}},
        {"[c]\ncommand = \"p\"\nstderr = \"[in:0]\"\n", {"key stderr", "[in:0]"}},
        {"[c]\ncommand = \"p\"\nsuccess_exit_codes = [0, 256]\n", {"key success_exit_codes", "256", "0..255"}},
        {"[c]\ncommand = \"p\"\nsuccess_exit_codes = []\n", {"key success_exit_codes", "non-empty"}},
        {"[c]\ncommand = \"p\"\nenv = \"A=1\"\n", {"key env", "not a table"}},
        {"[c]\ncommand = \"p\"\nenv = { A = 1 }\n", {"key env.A", "value 1", "not a string"}},
        {"[c]\ncommand = \"p\"\nallow_empty_outputs = 1\n", {"key allow_empty_outputs", "true or false"}},
        {"[c]\ncommand = \"p 'x\"\n", {"c.toml:2:", "key command", "never closed"}},
        {"[c]\ncommand = \"p\"\nunregistered = \"tmp\"\n",
         {"c.toml:3:", "key unregistered", "\"tmp\"", "error or temporary"}},
        {"[c]\ncommand = \"p\"\nexposure = \"memfd\"\nunregistered = \"temporary\"\n",
         {"c.toml:4:", "key unregistered", "\"temporary\"", "need exposure fuse or auto"}},
    };
    for (const Case& c : cases) {
        auto result = Config::parse(c.text, "c.toml");
        ASSERT_FALSE(result.has_value()) << c.text;
        for (auto mention : c.mentions) {
            EXPECT_NE(result.error().message.find(mention), std::string::npos)
                << "'" << mention << "' not in: " << result.error().message;
        }
        EXPECT_NE(result.error().message.find("entry [c]"), std::string::npos) << result.error().message;
    }
}

TEST(ExternalConfig, a_top_level_value_that_is_not_an_entry_is_an_error) {
    EXPECT_TRUE(fails_with(Config::parse("command = \"prog\"\n", "t.toml"), Errc::invalid_argument,
                           {"t.toml:1:", "key command", "not an entry"}));
}

TEST(ExternalConfig, a_file_that_is_not_toml_names_the_line) {
    EXPECT_TRUE(fails_with(Config::parse("[c]\ncommand = \"p\"\n[c\n", "bad.toml"), Errc::invalid_argument,
                           {"bad.toml:3:", "not valid TOML"}));
}

TEST(ExternalConfig, a_missing_file_names_the_path_and_the_errno) {
    EXPECT_TRUE(
        fails_with(Config::load("/nonexistent/ext.toml"), Errc::not_found, {"/nonexistent/ext.toml", "ENOENT"}));
}

TEST(ExternalConfig, load_reads_a_real_file) {
    strata::test::TempDir dir;
    const auto path = dir / "ext.toml";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("[hash]\ncommand = \"sha256sum [in:0]\"\nstdout = \"[out:0]\"\n", f);
        std::fclose(f);
    }
    STRATA_ASSERT_ASSIGN(sut, Config::load(path));
    STRATA_ASSERT_ASSIGN(entry, sut.find("hash"));
    EXPECT_EQ(entry->file, path.string());
    EXPECT_EQ(entry->command_text, "sha256sum [in:0]");
}

}  // namespace
}  // namespace strata::external
