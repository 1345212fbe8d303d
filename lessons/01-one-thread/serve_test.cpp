// serve_until_shutdown, the way lessons 01 and 02 run their servers: what a client gets when a
// handler throws.
#include "lessons/01-one-thread/serve.hpp"
#include "lessons/common/process.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

const std::string secret = "the text of an exception, which no client may see";

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// A child process that runs serve_until_shutdown with one route, GET /throw, whose handler
// throws std::runtime_error(secret); its stdout and stderr go to `log_path`. Returns its pid.
int start_throwing_server(const std::string& log_path) {
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(log_fd >= 0);
    const int pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlives the test
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        block_shutdown_signals();
        httplib::Server server;
        server.Get("/throw", [](const httplib::Request&, httplib::Response& res) {
            res.set_header("X-Half-Done", "yes"); // set before the throw: must not be sent
            throw std::runtime_error(secret);
        });
        serve_until_shutdown(server, "serve_test", 0);
        ::_exit(0);
    }
    ::close(log_fd);
    return pid;
}

} // namespace

TEST_CASE("a handler's exception is answered with a plain 500, its text only in the server's "
          "log",
          "[lesson01]") {
    const std::string log_path = test_log_dir() + "/serve-throwing.log";
    const int pid = start_throwing_server(log_path);
    STEP("serve_until_shutdown in process " << pid << ", log " << log_path);
    std::smatch port;
    const std::regex listening(R"(listening on http://127\.0\.0\.1:([0-9]+))");
    std::string log;
    // Binding a port takes milliseconds; 20 s is for a machine that is very busy.
    REQUIRE(eventually(
        [&] {
            log = read_file(log_path);
            return std::regex_search(log, port, listening);
        },
        20s));
    RawConnection client(std::stoi(port[1]));
    REQUIRE(client.send(get_request("/throw?id=7")));
    const std::string response = client.receive_response(20s);
    STEP("GET /throw answered:\n" << response);
    ::kill(pid, SIGTERM);
    int status = -1;
    ::waitpid(pid, &status, 0);
    log = read_file(log_path);
    STEP("server stopped; its log:\n" << log);

    CHECK(status_of(response) == 500);
    CHECK(response.find("EXCEPTION_WHAT") == std::string::npos);
    CHECK(response.find("X-Half-Done") == std::string::npos);
    CHECK(response.find(secret) == std::string::npos);
    CHECK(body_of(response).empty());
    // Where the text goes instead: one line on stderr, after the program's name.
    CHECK(log.find(": GET /throw?id=7: a handler threw: " + secret + "\n") != std::string::npos);
}
