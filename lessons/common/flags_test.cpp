// Flags: what every program's command line promises (see flags.hpp), in-process through
// try_parse, and through a real program where only a process shows it (--print-config's exit).
#include "lessons/common/flags.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace std::chrono_literals;

namespace {

const std::string lesson01 = BIN_DIR "/lesson01";

struct Settings {
    int port = 8080;
    std::string db = "host=/tmp port=5432";
    std::chrono::milliseconds timeout = 30s;
    bool keep_alive = false;
    std::string profile = "platform";
};

void declare(Flags& flags, Settings& s) {
    flags.add("port", s.port, 0, 65535, "the port")
        .add("db", s.db, "the conninfo")
        .add("timeout", s.timeout, 1ms, 1h, "how long")
        .add("keep-alive", s.keep_alive, "keep connections")
        .add("profile", s.profile, {"platform", "vt"}, "the wiring");
}

std::string parse(Settings& s, const std::vector<std::string>& args) {
    Flags flags("prog", "A program.");
    declare(flags, s);
    return flags.try_parse(args);
}

// The arguments a line of --print-config stands for when pasted into a shell: `--db='a b'`
// is the one argument `--db=a b` (only single quotes and '\'' are used).
std::string unquoted(const std::string& line) {
    std::string out;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\'')
            quoted = !quoted;
        else if (line[i] == '\\' && !quoted && i + 1 < line.size())
            out += line[++i];
        else
            out += line[i];
    }
    return out;
}

} // namespace

TEST_CASE("flags take --name value and --name=value, and the last one given wins", "[flags]") {
    Settings s;
    REQUIRE(parse(s, {"--port", "9", "--db", "x y", "--timeout", "50ms", "--keep-alive",
                      "--profile=vt", "--port=10"}) == "");
    CHECK(s.port == 10);
    CHECK(s.db == "x y");
    CHECK(s.timeout == 50ms);
    CHECK(s.keep_alive);
    CHECK(s.profile == "vt");
}

TEST_CASE("a bad flag is one message that names the flag and what is wrong with it", "[flags]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--prot", "9"}, "unknown flag '--prot'"},
        {{"--prot=9"}, "unknown flag '--prot'"},
        {{"9"}, "unexpected argument '9'"},
        {{"--port"}, "--port needs a value"},
        {{"--port", "many"}, "--port: 'many' is not a number"},
        {{"--port", "1.5"}, "--port: '1.5' is not an integer"},
        {{"--port", "nan"}, "--port: 'nan' is not a number"},
        {{"--port", "70000"}, "--port: '70000' is not in 0..65535"},
        {{"--port", "-1"}, "--port: '-1' is not in 0..65535"},
        {{"--port", "1e30"}, "--port: '1e30' is not in 0..65535"},
        {{"--timeout", "0"}, "--timeout: '0' is not in 1ms..1h"},
        {{"--timeout", "2h"}, "--timeout: '2h' is not in 1ms..1h"},
        {{"--timeout", "99999999999999999999"},
         "--timeout: '99999999999999999999' is longer than a year"},
        {{"--timeout", "soon"}, "--timeout: 'soon' is not a duration (examples: 500ms, 30s, 2m)"},
        {{"--timeout", "-1s"}, "--timeout: '-1s' is not a duration (examples: 500ms, 30s, 2m)"},
        {{"--timeout", "5 s"}, "--timeout: '5 s' is not a duration (examples: 500ms, 30s, 2m)"},
        {{"--profile", "gated"}, "--profile: 'gated' is not one of platform|vt"},
        // Every value is checked before --help is honoured (lessons/tools/check-commands relies
        // on `ARGS --help` failing when ARGS are wrong).
        {{"--port", "eighty", "--help"}, "--port: 'eighty' is not a number"},
        {{"--help", "--prot"}, "unknown flag '--prot'"},
    };
    for (const auto& [args, message] : cases) {
        Settings s;
        std::ostringstream given;
        for (const auto& arg : args)
            given << " " << arg;
        STEP("parsed" << given.str());
        CHECK(parse(s, args) == message);
    }
}

TEST_CASE("durations take ms, s, m and h, and a bare number means seconds", "[flags]") {
    CHECK(parse_duration("500ms") == 500ms);
    CHECK(parse_duration("30s") == 30s);
    CHECK(parse_duration("2m") == 2min);
    CHECK(parse_duration("1h") == 1h);
    CHECK(parse_duration("0.5") == 500ms);
    CHECK(parse_duration("1.5m") == 90s);
    CHECK(format_duration(30s) == "30s");
    CHECK(format_duration(1500ms) == "1500ms");
    CHECK(format_duration(0ms) == "0ms");
    CHECK(format_duration(2min) == "2m");
    CHECK(format_duration(1h) == "1h");
    CHECK_THROWS_WITH(parse_duration("366d"), Catch::Contains("not a duration"));
    CHECK_THROWS_WITH(parse_duration("9000h"), "'9000h' is longer than a year");
}

TEST_CASE("the help explains every flag with its default", "[flags]") {
    Settings s;
    Flags flags("prog", "A program.");
    declare(flags, s);
    REQUIRE(flags.try_parse({"--help"}) == "");
    const std::string help = flags.usage();
    STEP("--help said:\n" << help);
    CHECK(help.find("A program.") != std::string::npos);
    for (const std::string line :
         {"--port VALUE", "the port [default: 8080; 0..65535]",
          "the conninfo [default: host=/tmp port=5432]", "how long [default: 30s; 1ms..1h]",
          "--keep-alive ", "the wiring (platform|vt) [default: platform]", "--print-config",
          "--help"})
        CHECK(help.find(line) != std::string::npos);
}

TEST_CASE("what --print-config prints gives every flag's value in a form that parses back to the "
          "same values",
          "[flags]") {
    Settings first;
    Flags flags("prog", "A program.");
    declare(flags, first);
    REQUIRE(flags.try_parse({"--db", "it's here", "--timeout", "1500ms", "--keep-alive"}) == "");
    const std::string config = flags.config();
    STEP("config:\n" << config);
    CHECK(config == "--port=8080\n--db='it'\\''s here'\n--timeout=1500ms\n"
                    "--keep-alive=true\n--profile=platform\n");

    std::vector<std::string> pasted;
    std::istringstream lines(config);
    for (std::string line; std::getline(lines, line);)
        pasted.push_back(unquoted(line));
    Settings second;
    REQUIRE(parse(second, pasted) == "");
    CHECK(second.db == "it's here");
    CHECK(second.timeout == 1500ms);
    CHECK(second.keep_alive);
}

TEST_CASE("a program prints its --print-config and exits 0, before it does anything else",
          "[flags][lesson01]") {
    std::string output;
    const int status = run_program({lesson01, "--port", "9", "--print-config"}, output);
    STEP("lesson01 --port 9 --print-config exited " << status << ", said: " << output);
    CHECK(status == 0);
    CHECK(output == "--port=9\n--keep-alive=false\n");
}

TEST_CASE("on_parsed callbacks run once each, in order, after a successful parse only", "[flags]") {
    std::vector<std::string> heard;
    const auto parse_and_hear = [&heard](const std::vector<std::string>& args) {
        Settings s;
        Flags flags("prog", "A program.");
        declare(flags, s);
        flags.on_parsed([&heard, &s] { heard.push_back("first, port " + std::to_string(s.port)); })
            .on_parsed([&heard] { heard.push_back("second"); });
        return flags.try_parse(args);
    };

    STEP("--port 9: both, in the order registered, once the values are set");
    CHECK(parse_and_hear({"--port", "9"}) == "");
    CHECK(heard == std::vector<std::string>{"first, port 9", "second"});

    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--help"}, {"--print-config"}, {"--port", "x"}, {"--prot"}}) {
        heard.clear();
        STEP("no callback after " << args[0] << (args.size() > 1 ? " " + args[1] : ""));
        parse_and_hear(args);
        CHECK(heard.empty());
    }
}
