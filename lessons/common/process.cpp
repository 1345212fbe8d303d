#include "lessons/common/process.hpp"

#include "lessons/common/tracing.hpp"

#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

sigset_t shutdown_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

} // namespace

void block_shutdown_signals() {
    sigset_t set = shutdown_signals();
    sigaddset(&set, SIGUSR1); // TraceFlags's thread waits for it
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

int wait_for_shutdown_signal() {
    const sigset_t set = shutdown_signals();
    int signal = 0;
    while (sigwait(&set, &signal) != 0) {
    }
    trace_stop_began();
    return signal;
}

void announce_listening(const std::string& host, int port) {
    std::printf("listening on http://%s:%d\n", host.c_str(), port);
    std::fflush(stdout);
}

void fail(const std::string& program, const std::string& message, int status) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), message.c_str());
    std::exit(status);
}

std::string explain_bind_failure(const std::string& host, int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1)
        return "'" + host + "' is not an IPv4 address";
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return std::strerror(errno);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    std::string reason = "unknown reason";
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        reason = std::strerror(errno);
    ::close(fd);
    return reason;
}

long raise_open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        const rlim_t before = limit.rlim_cur;
        limit.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
    }
    return static_cast<long>(limit.rlim_cur);
}

void name_this_thread(const std::string& name) {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

std::string thread_label() {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    return std::string(name) + "#" + std::to_string(gettid());
}

std::chrono::nanoseconds thread_cpu_time() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}
