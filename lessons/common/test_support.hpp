// Helpers for the tests: start a lesson server as a real process on a free port, talk raw TCP to
// it, and tell the story of a test when it fails.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// STEP("request sent") records one step of the test's story. Every STEP in scope is printed, in
// order, above any assertion that fails, so a failure reads "step: server started on port 4321,
// step: 10 requests sent, ...; expected ... got ...". Use it at test-case scope.
#define STEP(text) INFO("step: " << text)

// A server binary started with `--port 0 args...`, stdout and stderr going to a log file.
// The constructor returns once the server printed "listening on http://127.0.0.1:PORT" (or throws
// std::runtime_error with the log's tail). The destructor stops it: SIGTERM, then SIGKILL after a
// grace period. The child also dies with SIGKILL if the test process dies first, so a crashed or
// aborted test never leaves a server behind.
class ServerProcess {
public:
    ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& log_name);
    ~ServerProcess();
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    int port() const { return port_; }
    int pid() const { return pid_; }
    const std::string& log_path() const { return log_path_; }
    std::string log() const;

    // Sends SIGTERM, waits up to `grace`, then SIGKILL. Returns the exit status, or 128 + signal
    // number when it died of a signal (as a shell reports it).
    int stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
    bool running();

private:
    int pid_ = -1;
    int port_ = 0;
    std::string log_path_;
};

// Runs a program to completion and returns its exit status (128 + signal if killed), with its
// stdout and stderr captured into `output`. Used to check flag handling and error messages.
int run_program(const std::vector<std::string>& argv, std::string& output,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Where tests write their transcripts (server logs); printed when a test fails.
std::string test_log_dir();

// A blocking TCP client for feeding a server exact bytes: malformed requests, half requests,
// slow clients. Every call has a deadline, so a test never hangs on a silent server.
class RawConnection {
public:
    explicit RawConnection(int port);
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    bool send(const std::string& bytes);
    // Reads until the peer closes, `want_bytes` have arrived, or `timeout` passes.
    std::string receive(std::chrono::milliseconds timeout, std::size_t want_bytes = SIZE_MAX);
    // Reads one whole HTTP response (head, and a body of Content-Length bytes).
    std::string receive_response(std::chrono::milliseconds timeout);
    // True when the peer closed the connection within `timeout` (read returned 0 or reset).
    bool closed_by_peer(std::chrono::milliseconds timeout);
    void close();
    int fd() const { return fd_; }

private:
    int fd_ = -1;
    std::string pending_; // bytes read past the end of the last response
};

// A slowloris: a client that sends `request` one byte every `every` on a thread of its own, and
// stops when the server answers or closes, when every byte is sent, or when it is destroyed.
// With `every` below a server's per-read timeout, only a deadline on the whole request ends it.
class TricklingClient {
public:
    TricklingClient(int port, std::string request, std::chrono::milliseconds every);
    ~TricklingClient();
    TricklingClient(const TricklingClient&) = delete;
    TricklingClient& operator=(const TricklingClient&) = delete;

    // True once the server has answered or closed the connection.
    bool cut_off() const;
    // What the server sent, once cut_off().
    std::string answer() const;

private:
    RawConnection connection_;
    mutable std::mutex mutex_;
    std::condition_variable stop_;
    bool stopping_ = false, cut_off_ = false;
    std::string answer_;
    std::thread thread_;
};

// "GET path HTTP/1.1" with a Host header and nothing more: a request that keeps the connection.
std::string get_request(const std::string& path);

// The body of a whole raw response (what follows the blank line); "" when there is none.
std::string body_of(const std::string& response);

// When two clients that send one request each on a kept-alive connection, and then stay quiet,
// got their answers (seconds after the first request went out): a worker or a carrier held by the
// first client's keep-alive wait shows as a second answer that waited for it.
struct KeepAliveRace {
    double first_at = 0, second_at = 0;
    int first_status = 0, second_status = 0;
};
KeepAliveRace two_quiet_keep_alive_clients(int port, const std::string& path);

// Polls `condition` every 2 ms until it holds (true) or `timeout` passes (false). For waiting on
// state another thread changes; the timeout is generous, nothing here measures time with it.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

// "HTTP/1.1 200 OK\r\n..." -> 200; 0 when the text is not a status line.
int status_of(const std::string& response);

struct TimedGet {
    int status = 0; // 0 when the request failed at the transport level
    double seconds = 0;
    std::string body;
};

// Sends `count` GET requests to 127.0.0.1:port/path at the same moment, each on its own
// connection and thread, and waits for all of them. `seconds` is per request.
std::vector<TimedGet> concurrent_get(int port, const std::string& path, int count,
                                     std::chrono::seconds timeout = std::chrono::seconds(60));

// One GET on 127.0.0.1:port, waiting up to 10 s for the answer: its status and body (status 0
// when no answer came). The lesson servers answer JSON; read it with nlohmann::json::parse.
struct Answer {
    int status = 0;
    std::string body;
};
Answer http_get(int port, const std::string& path);

// Seconds since `start`, for the story of a test.
double seconds_since(std::chrono::steady_clock::time_point start);

// Calls `bytes` deep into the caller's stack, 1 KiB a frame, then returns: the pages it touched
// stay resident. And how many pages of [begin, end) are resident (mincore(2)): what RSS counts.
// For the tests of fiber stacks that give pages back (lessons 02 and 03).
int touch_stack(int bytes);
std::size_t resident_pages(const char* begin, const char* end);
