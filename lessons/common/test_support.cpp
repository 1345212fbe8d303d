#include "lessons/common/test_support.hpp"

#include <httplib.h>

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#ifndef TEST_LOG_DIR
#define TEST_LOG_DIR "/tmp"
#endif

namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string tail(const std::string& text, std::size_t max = 2000) {
    return text.size() <= max ? text : "..." + text.substr(text.size() - max);
}

// Status the way a shell reports it: the exit code, or 128 + the signal that killed it.
int shell_status(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return -1;
}

// Waits for `pid` until `deadline`; returns true and the status when it ended.
bool wait_until(int pid, Clock::time_point deadline, int& status) {
    for (;;) {
        int raw = 0;
        const int done = ::waitpid(pid, &raw, WNOHANG);
        if (done == pid) {
            status = shell_status(raw);
            return true;
        }
        if (done < 0 && errno != EINTR) {
            status = -1;
            return true;
        }
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// fork + exec with output to `log_fd`; the child dies with us (PR_SET_PDEATHSIG) and gets its own
// process group so that a stop reaches anything it started.
int spawn(const std::vector<std::string>& argv, int log_fd) {
    std::vector<char*> args;
    for (const auto& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const int parent = ::getpid();
    const int pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127); // the parent died before prctl took effect
        // The test runner may have blocked signals; the server must start with a clean mask.
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        ::execv(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        ::_exit(127);
    }
    return pid;
}

} // namespace

std::string test_log_dir() {
    ::mkdir(TEST_LOG_DIR, 0755);
    return TEST_LOG_DIR;
}

Answer http_get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(10, 0);
    const auto response = client.Get(path.c_str());
    if (!response) return {};
    return {response->status, response->body};
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

[[gnu::noinline]] int touch_stack(int bytes) { // noinline: one frame per call
    volatile char frame[1024];
    frame[0] = 1;
    frame[sizeof frame - 1] = 1;
    return bytes <= 1024 ? frame[0] : touch_stack(bytes - 1024) + frame[0];
}

std::size_t resident_pages(const char* begin, const char* end) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((static_cast<std::size_t>(end - begin) + page - 1) / page);
    if (::mincore(const_cast<char*>(begin), static_cast<std::size_t>(end - begin),
                  resident.data()) != 0)
        return 0;
    std::size_t count = 0;
    for (unsigned char r : resident)
        count += r & 1u;
    return count;
}

ServerProcess::ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                             const std::string& log_name)
    : log_path_(test_log_dir() + "/" + log_name + ".log") {
    std::vector<std::string> argv{binary, "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot write " + log_path_);
    pid_ = spawn(argv, log_fd);
    ::close(log_fd);

    // Wait for the announcement; a server that needs more than 20 s to bind a port is broken.
    static const std::regex listening(R"(listening on http://[0-9.]+:([0-9]+))");
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    for (;;) {
        std::smatch match;
        const std::string text = read_file(log_path_);
        if (std::regex_search(text, match, listening)) {
            port_ = std::stoi(match[1]);
            return;
        }
        int status = 0;
        if (wait_until(pid_, Clock::now(), status)) {
            pid_ = -1;
            throw std::runtime_error(binary + " exited with status " + std::to_string(status) +
                                     " before listening; log " + log_path_ + ":\n" + tail(text));
        }
        if (Clock::now() > deadline) {
            stop();
            throw std::runtime_error(binary + " did not print 'listening on' within 20 s; log " +
                                     log_path_ + ":\n" + tail(text));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

ServerProcess::~ServerProcess() {
    stop();
}

std::string ServerProcess::log() const {
    return read_file(log_path_);
}

bool ServerProcess::running() {
    if (pid_ < 0) return false;
    int status = 0;
    if (wait_until(pid_, Clock::now(), status)) {
        pid_ = -1;
        return false;
    }
    return true;
}

int ServerProcess::stop(std::chrono::milliseconds grace) {
    if (pid_ < 0) return -1;
    int status = 0;
    ::kill(pid_, SIGTERM);
    if (!wait_until(pid_, Clock::now() + grace, status)) {
        ::kill(-pid_, SIGKILL); // the whole process group
        ::kill(pid_, SIGKILL);
        wait_until(pid_, Clock::now() + std::chrono::seconds(10), status);
        status = 128 + SIGKILL;
    }
    pid_ = -1;
    return status;
}

int run_program(const std::vector<std::string>& argv, std::string& output,
                std::chrono::milliseconds timeout) {
    const std::string path = test_log_dir() + "/run_program." + std::to_string(::getpid()) + ".out";
    const int log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot write " + path);
    const int pid = spawn(argv, log_fd);
    ::close(log_fd);
    int status = 0;
    if (!wait_until(pid, Clock::now() + timeout, status)) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        wait_until(pid, Clock::now() + std::chrono::seconds(10), status);
        status = 128 + SIGKILL;
    }
    output = read_file(path);
    ::unlink(path.c_str());
    return status;
}

RawConnection::RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        const std::string reason = std::strerror(errno);
        ::close(fd_);
        fd_ = -1;
        throw std::runtime_error("connect to port " + std::to_string(port) + ": " + reason);
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
    close();
}

void RawConnection::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool RawConnection::send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

std::string RawConnection::receive(std::chrono::milliseconds timeout, std::size_t want_bytes) {
    std::string data;
    std::swap(data, pending_);
    const auto deadline = Clock::now() + timeout;
    char buffer[16384];
    while (data.size() < want_bytes) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) break;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n <= 0) break; // closed or reset
        data.append(buffer, static_cast<std::size_t>(n));
    }
    return data;
}

std::string RawConnection::receive_response(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string data;
    std::swap(data, pending_);
    for (;;) {
        const auto head_end = data.find("\r\n\r\n");
        if (head_end != std::string::npos) {
            std::size_t length = 0;
            static const std::regex content_length(R"(\r\n[Cc]ontent-[Ll]ength:\s*([0-9]+))");
            std::smatch match;
            const std::string head = data.substr(0, head_end + 2);
            if (std::regex_search(head, match, content_length)) length = std::stoul(match[1]);
            const std::size_t total = head_end + 4 + length;
            if (data.size() >= total) {
                pending_ = data.substr(total);
                return data.substr(0, total);
            }
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return data;
        const std::string more = receive(left, 1);
        if (more.empty()) return data;
        data += more;
    }
}

bool RawConnection::closed_by_peer(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    char buffer[4096];
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
    }
}

TricklingClient::TricklingClient(int port, std::string request, std::chrono::milliseconds every)
    : connection_(port) {
    thread_ = std::thread([this, request = std::move(request), every] {
        std::unique_lock<std::mutex> lock(mutex_);
        for (char byte : request) {
            lock.unlock();
            const bool sent = connection_.send(std::string(1, byte));
            pollfd p{connection_.fd(), POLLIN, 0};
            const bool answered = ::poll(&p, 1, 0) > 0; // the server spoke or hung up
            lock.lock();
            if (!sent || answered) break;
            if (stop_.wait_for(lock, every, [this] { return stopping_; })) return;
        }
        lock.unlock();
        std::string answer = connection_.receive(std::chrono::seconds(1));
        lock.lock();
        answer_ = std::move(answer);
        cut_off_ = true;
    });
}

TricklingClient::~TricklingClient() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
}

bool TricklingClient::cut_off() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cut_off_;
}

std::string TricklingClient::answer() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return answer_;
}

std::string get_request(const std::string& path) {
    return "GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n";
}

std::string body_of(const std::string& response) {
    const auto at = response.find("\r\n\r\n");
    return at == std::string::npos ? "" : response.substr(at + 4);
}

KeepAliveRace two_quiet_keep_alive_clients(int port, const std::string& path) {
    RawConnection first(port);
    RawConnection second(port);
    const auto start = Clock::now();
    KeepAliveRace race;
    if (!first.send(get_request(path)) || !second.send(get_request(path))) return race;
    race.first_status = status_of(first.receive_response(std::chrono::seconds(30)));
    race.first_at = seconds_since(start);
    race.second_status = status_of(second.receive_response(std::chrono::seconds(30)));
    race.second_at = seconds_since(start);
    return race;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!condition()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

int status_of(const std::string& response) {
    static const std::regex status_line(R"(^HTTP/1\.[01] ([0-9]{3}) )");
    std::smatch match;
    if (!std::regex_search(response, match, status_line)) return 0;
    return std::stoi(match[1]);
}

std::vector<TimedGet> concurrent_get(int port, const std::string& path, int count,
                                     std::chrono::seconds timeout) {
    std::vector<TimedGet> results(static_cast<std::size_t>(count));
    std::mutex mutex;
    std::condition_variable start_signal;
    bool go = false;
    std::vector<std::thread> clients;
    for (int i = 0; i < count; ++i) {
        clients.emplace_back([&, i] {
            httplib::Client client("127.0.0.1", port);
            client.set_read_timeout(timeout);
            client.set_connection_timeout(timeout);
            {
                std::unique_lock<std::mutex> lock(mutex);
                start_signal.wait(lock, [&] { return go; });
            }
            const auto start = Clock::now();
            auto response = client.Get(path.c_str());
            auto& result = results[static_cast<std::size_t>(i)];
            result.seconds = seconds_since(start);
            if (response) {
                result.status = response->status;
                result.body = response->body;
            }
        });
    }
    {
        std::lock_guard<std::mutex> lock(mutex);
        go = true;
    }
    start_signal.notify_all();
    for (auto& client : clients)
        client.join();
    return results;
}
