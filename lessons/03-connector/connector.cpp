#include "lessons/03-connector/connector.hpp"

#include "lessons/03-connector/fiber_socket.hpp"
#include "lessons/03-connector/fiber_stream.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/process.hpp"
#include "lessons/common/tracing.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <boost/fiber/operations.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <set>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

int listen_on(const std::string& host, int port, int backlog) {
    const std::string where = "cannot listen on " + host + ":" + std::to_string(port) + ": ";
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1)
        throw std::runtime_error(where + "'" + host + "' is not an IPv4 address");
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(where + std::strerror(errno));
    // SO_REUSEADDR lets a restarted server bind at once; without SO_REUSEPORT a port that
    // another server holds is refused, as it should be.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd, backlog) != 0) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        throw std::runtime_error(where + reason);
    }
    return fd;
}

int bound_port(int fd) {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    return ntohs(address.sin_port);
}

// After a refusal, or the last response of a connection, the client may still be sending. Closing
// with unread bytes makes the kernel send a reset, which can destroy our response before the client
// reads it. So: stop sending, read and drop what arrives for a moment, then close. noinline: its 4
// KiB sink would otherwise join serve_connection's frame and make every connection fiber touch one
// more page of stack (4 KiB more memory per connection).
[[gnu::noinline]] void close_politely(FiberSocket& socket) {
    ::shutdown(socket.fd(), SHUT_WR);
    const Deadline until = deadline_after(std::chrono::milliseconds(500));
    char sink[4096];
    for (int reads = 0; reads < 64; ++reads)
        if (socket.receive(sink, sizeof sink, until) <= 0) break;
}

// How long the acceptor waits after accept() failed for want of descriptors or memory. Retrying
// at once would fail again at once and spin carrier 0; 100 ms costs a waiting client little.
constexpr auto accept_back_off = std::chrono::milliseconds(100);

// accept() failures that belong to one client (it reset before we took it, its network went
// away; accept(2) lists them): the next client may be fine, so accept again at once.
bool one_clients_failure(int error) {
    static const int errors[] = {ECONNABORTED, EINTR,       EPROTO,      EPERM,
                                 ENETDOWN,     ENETUNREACH, EHOSTDOWN,   ENONET,
                                 ENOPROTOOPT,  EOPNOTSUPP,  EHOSTUNREACH};
    return std::find(std::begin(errors), std::end(errors), error) != std::end(errors);
}

// "GET /work" from a request head: how a trace names the connection's fiber once it has a request.
std::string method_and_target(const std::string& head) {
    const std::size_t line_end = head.find_first_of("\r\n");
    const std::size_t target_end = head.find(' ', head.find(' ') + 1);
    return head.substr(0, std::min(line_end, target_end));
}

} // namespace

// What a connection holds from the moment the acceptor counted it: its slot under
// max_connections, its entry in its carrier's registry (for stop()), and its descriptor, which
// `socket` owns once it exists. The destructor gives all of them back however serve_connection
// ends, by return or by exception: the entry first, so that stop() never shuts down a
// descriptor number after it was closed and perhaps reused (by a database connection, say).
struct Connector::ConnectionLease {
    Connector& connector;
    int fd;
    std::unordered_set<int>& registry;
    std::optional<FiberSocket> socket;

    ~ConnectionLease() {
        registry.erase(fd);
        if (socket) {
            socket.reset(); // closes fd
        } else {
            ::close(fd); // FiberSocket's constructor threw: the descriptor is still ours
        }
        connector.connection_closed();
    }
};

Connector::Connector(HttpApp& app, ConnectorOptions options, Executor executor)
    : app_(app), options_(std::move(options)), executor_(std::move(executor)) {
    if (!executor_) executor_ = [](const std::function<bool()>& serve) { return serve(); };
    if (options_.carriers <= 0)
        options_.carriers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // The response's "Keep-Alive: timeout=..., max=..." header tells clients our real limits.
    // Whole seconds, rounded up: "timeout=0" would tell a client not to keep the connection.
    app_.set_keep_alive_timeout(
        std::chrono::ceil<std::chrono::seconds>(options_.keep_alive_timeout).count());
    app_.set_keep_alive_max_count(static_cast<std::size_t>(options_.keep_alive_requests));
    app_.set_payload_max_length(0); // no endpoint takes a body: 413 here too, behind the guard
}

Connector::~Connector() {
    begin_stop();
    join_carriers(); // after a stop() that gave up: waits for the requests still running
}

void Connector::start() {
    // One descriptor per connection: make sure the process may open max_connections of them.
    const long allowed = raise_open_file_limit();
    if (allowed >= 0 && allowed < options_.max_connections + 64L)
        std::fprintf(stderr,
                     "connector: --max-connections %d, but this process may open only %ld "
                     "files (ulimit -Hn): past that, accept() fails and the connector "
                     "waits for connections to close\n",
                     options_.max_connections, allowed);
    listen_fd_ = listen_on(options_.host, options_.port, options_.accept_count);
    port_ = bound_port(listen_fd_);
    sockets_by_carrier_.resize(static_cast<std::size_t>(options_.carriers));
    idle_ = std::make_unique<IdleConnections>(static_cast<std::size_t>(options_.carriers));
    for (int i = 0; i < options_.carriers; ++i)
        timers_.push_back(std::make_unique<KeepAliveTimer>());
    for (int i = 0; i < options_.carriers; ++i)
        carriers_.push_back(std::make_unique<Carrier>(
            options_.carrier_name + "-" + std::to_string(i),
            [] { use_carrier_algorithm<Reactor>(); }, options_.fiber_stack_size));
    carriers_[0]->spawn([this, fd = listen_fd_] { accept_loop(fd); });
    if (options_.keep_alive_timeout.count() > 0) // 0: kept-alive connections never time out
        for (std::size_t i = 0; i < carriers_.size(); ++i)
            carriers_[i]->spawn([this, i] { time_out_idle_connections(i); });
}

// The keep-alive timeout of every connection on one carrier: sleeps until the wait that began
// first falls due, closes it (and any other due), and sleeps again. On the way it lightens the
// connections idle for a second (idle_connections.hpp).
void Connector::time_out_idle_connections(std::size_t carrier) {
    trace_label_fiber("keep-alive timer");
    // A year is forever here; a longer span would overflow the clock's arithmetic below.
    const auto timeout = std::min<std::chrono::milliseconds>(options_.keep_alive_timeout,
                                                             std::chrono::hours(24 * 365));
    // A connection quiet this long is likely to stay so; lightening it costs a wake, a madvise
    // and a few page faults at its next request, so not sooner, and in batches (the second).
    constexpr auto lighten_after = std::chrono::seconds(1);
    constexpr auto lighten_batch = std::chrono::milliseconds(250);
    KeepAliveTimer& timer = *timers_[carrier];
    std::unique_lock<boost::fibers::mutex> lock(timer.mutex);
    while (!stopping_) {
        const auto now = std::chrono::steady_clock::now();
        const auto oldest = idle_->close_idle_before(carrier, now - timeout);
        const auto heaviest = idle_->lighten_idle_before(carrier, now - lighten_after);
        // Nobody left to lighten: the next connection to fall idle wakes the timer (wake_timer),
        // so that it is lightened a second later, not whenever the timer next wakes.
        timer.waiting_for_idle = !heaviest;
        const auto woken = [&] {
            return stopping_.load() || (!heaviest && !timer.waiting_for_idle);
        };
        if (!oldest) { // nobody idle: nothing falls due until somebody is
            timer.wake.wait(lock, woken);
            continue;
        }
        Deadline next = *oldest + timeout;
        if (heaviest)
            next = std::min(next, std::max(*heaviest + lighten_after, now + lighten_batch));
        timer.wake.wait_until(lock, next, woken);
    }
}

void Connector::wake_timer(std::size_t carrier) {
    KeepAliveTimer& timer = *timers_[carrier];
    std::lock_guard<boost::fibers::mutex> lock(timer.mutex);
    timer.waiting_for_idle = false;
    timer.wake.notify_one();
}

void Connector::accept_loop(int listen_fd) {
    // The listening socket joins carrier 0's reactor; the Connector closes it after stop().
    trace_label_fiber("acceptor");
    Watch listener;
    listener.fd = listen_fd;
    Reactor::current()->add(listener);
    std::size_t next_carrier = 0;
    std::set<int> told; // the failures already explained on stderr
    while (!stopping_) {
        if (open_.load() >= options_.max_connections) {
            wait_for_room(listener);
            continue;
        }
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            const int error = errno;
            if (error == EAGAIN || error == EWOULDBLOCK) {
                wait_ready(listener, Direction::read, no_deadline); // stop() wakes it
            } else if (!one_clients_failure(error)) {
                // Out of descriptors (EMFILE, ENFILE) or of kernel memory (ENOBUFS, ENOMEM).
                if (told.insert(error).second)
                    std::fprintf(stderr,
                                 "connector: accept failed at %d open connections: %s (%s); "
                                 "retrying every %lld ms\n",
                                 open_.load(), std::strerror(error),
                                 error == EMFILE || error == ENFILE
                                     ? "raise `ulimit -n` or lower --max-connections"
                                     : "the kernel is short of memory",
                                 static_cast<long long>(accept_back_off.count()));
                boost::this_fiber::sleep_for(accept_back_off);
            }
            continue;
        }
        // Counted before stopping_ is read again: stop() sets stopping_ before it counts, so
        // either stop() sees this connection and waits for it, or we see stopping_ here and
        // close it. Nothing is ever spawned onto a carrier that stop() has closed.
        trace_counter(options_.connections_counter, "value", open_.fetch_add(1) + 1);
        if (stopping_) {
            ::close(fd);
            connection_closed();
            break;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const std::size_t carrier = next_carrier++ % carriers_.size();
        carriers_[carrier]->spawn([this, fd, carrier] { serve_connection(fd, carrier); });
    }
    Reactor::current()->remove(listener);
}

// At max_connections, fair admission (idle_connections.hpp). Nothing is done until a newcomer
// waits in the kernel's accept queue (a slot that frees meanwhile is taken when one comes); then
// the connection idle longest gives way to it, or, when none is idle, the newcomer waits for a
// connection to close or to fall idle. Returns when the acceptor should look again.
void Connector::wait_for_room(Watch& listener) {
    pollfd queue{listener.fd, POLLIN, 0};
    int waiting = 0;
    while ((waiting = ::poll(&queue, 1, 0)) < 0 && errno == EINTR) {
    }
    if (waiting == 0) {
        wait_ready(listener, Direction::read, no_deadline); // a newcomer, or stop()
        return;
    }
    const auto room = [this] {
        return open_.load() < options_.max_connections || stopping_.load();
    };
    std::unique_lock<boost::fibers::mutex> lock(slot_mutex_);
    if (room()) return;
    if (idle_->evict_longest_idle()) {
        idle_evictions_.fetch_add(1, std::memory_order_relaxed);
        slot_freed_.wait(lock, room); // until the evicted connection has closed
        return;
    }
    // Every connection is in a request (or before its first): the first to close or to fall
    // idle wakes us. Set before idle_->any() looks, so that a connection that falls idle after
    // that look sees it set (both sequentially consistent) and notifies.
    waiting_for_idle_ = true;
    slot_freed_.wait(lock, [&] { return room() || idle_->any(); });
    waiting_for_idle_ = false;
}

// Reads the next request's head, before `deadline`, and checks it against the guard's limits.
// Returns false when the client went away mid-request; otherwise `refusal` says whether to answer
// it ourselves.
bool Connector::read_checked_head(FiberStream& stream, Deadline deadline,
                                  std::optional<Refusal>& refusal) const {
    const GuardLimits& limits = options_.limits;
    switch (stream.read_head(limits.max_head_bytes, deadline)) {
    case FiberStream::Head::closed:
        return false;
    case FiberStream::Head::too_large:
        refusal =
            Refusal{431, "request head over " + std::to_string(limits.max_head_bytes) + " bytes"};
        return true;
    case FiberStream::Head::timeout:
        refusal = Refusal{408, "the request did not arrive within the read timeout"};
        return true;
    case FiberStream::Head::complete:
        refusal = check_request_head(stream.head(), limits);
        return true;
    }
    return false;
}

void Connector::serve_connection(int fd, std::size_t carrier) {
    // This carrier's registry of open sockets, for stop(); only this carrier's fibers touch it.
    trace_label_fiber("conn %d", fd); // --trace names this fiber's turns
    ConnectionLease lease{*this, fd, sockets_by_carrier_[carrier], std::nullopt};
    lease.registry.insert(fd);
    FiberSocket& socket = lease.socket.emplace(fd);
    FiberStream stream(socket, options_.read_timeout, options_.write_timeout);
    // The first request's head must be in within read_timeout of the accept: a client that
    // connects and sends nothing gets no keep-alive timeout to idle away.
    const Deadline first_head_by = deadline_after(options_.read_timeout);
    for (int served = 0; !stopping_;) {
        // A client that pipelines requests would keep this fiber busy without a single wait,
        // starving the other connections on this carrier: give them a turn between requests.
        if (stream.has_buffered_input()) boost::this_fiber::yield();
        bool shut = false;
        if (served == 0) {
            if (stream.wait_for_request(first_head_by) != FiberStream::Arrival::request) break;
        } else if (!stream.has_buffered_input()) {
            // The keep-alive wait: a parked fiber, no thread, no timer of its own (the carrier's
            // keep-alive timer ends it). A newcomer at max_connections may take its place.
            IdleConnections::Waiting idle(*idle_, carrier, socket);
            if (waiting_for_idle_) wake_acceptor();
            if (timers_[carrier]->waiting_for_idle) wake_timer(carrier);
            const FiberStream::Arrival arrival = stream.wait_for_request(no_deadline);
            shut = idle.end();
            if (arrival != FiberStream::Arrival::request) break;
        }
        std::optional<Refusal> refusal;
        const Deadline head_by =
            served == 0 ? first_head_by : deadline_after(options_.read_timeout);
        if (!read_checked_head(stream, head_by, refusal)) break;
        if (refusal) {
            refused_[refusal_slot(refusal->status)].fetch_add(1, std::memory_order_relaxed);
            const std::string response = refusal_response(*refusal);
            stream.write(response.data(), response.size());
            stream.flush();
            close_politely(socket);
            break;
        }
        if (tracing())
            trace_label_fiber("conn %d %s", fd, method_and_target(stream.head()).c_str());
        // A request that raced with its connection's eviction or timeout is answered, the last.
        const bool last = ++served >= options_.keep_alive_requests || stopping_ || shut;
        bool client_asked_to_close = false;
        // Parse, route, handle, respond: where that runs is the executor's choice.
        const bool keep_going = executor_([&] {
            const bool answered = app_.process(stream, last, client_asked_to_close);
            return stream.flush() && answered;
        });
        if (!keep_going) break;
        if (last || client_asked_to_close) {
            // The client may have sent more requests behind this one (pipelining): closing
            // with them unread would reset the connection and destroy answers it has not
            // read yet. End the way a refusal does.
            close_politely(socket);
            break;
        }
    }
}

std::size_t Connector::refusal_slot(int status) {
    return static_cast<std::size_t>(std::clamp(status, 400, 499) - 400);
}

std::vector<std::pair<int, std::uint64_t>> Connector::refusals() const {
    std::vector<std::pair<int, std::uint64_t>> counted;
    for (std::size_t slot = 0; slot < refused_.size(); ++slot)
        if (const std::uint64_t count = refused_[slot].load(std::memory_order_relaxed))
            counted.emplace_back(400 + static_cast<int>(slot), count);
    return counted;
}

void Connector::wake_acceptor() {
    std::lock_guard<boost::fibers::mutex> lock(slot_mutex_);
    slot_freed_.notify_one();
}

void Connector::connection_closed() {
    const int left = open_.fetch_sub(1) - 1;
    trace_counter(options_.connections_counter, "value", left);
    wake_acceptor();
    if (left == 0 && stopping_) {
        std::lock_guard<std::mutex> lock(drained_mutex_);
        drained_.notify_all();
    }
}

bool Connector::stop() {
    return stop(deadline_after(options_.stop_grace));
}

bool Connector::stop(Deadline give_up_at) {
    if (carriers_.empty()) return true; // never started, or stopped already
    begin_stop();
    {
        std::unique_lock<std::mutex> lock(drained_mutex_);
        if (!drained_.wait_until(lock, give_up_at, [this] { return open_.load() == 0; }))
            return false;
    }
    join_carriers();
    return true;
}

void Connector::begin_stop() {
    if (carriers_.empty() || stopping_.exchange(true)) return;
    // Wake the acceptor: its next accept() fails and it sees stopping_.
    ::shutdown(listen_fd_, SHUT_RDWR);
    {
        std::lock_guard<boost::fibers::mutex> lock(slot_mutex_);
        slot_freed_.notify_all();
    }
    for (auto& timer : timers_) {
        std::lock_guard<boost::fibers::mutex> lock(timer->mutex);
        timer->wake.notify_all();
    }
    // Idle connections are parked in their keep-alive wait: shutting their read side makes that
    // wait end at once. Busy ones finish their request first. Each carrier does its own.
    for (std::size_t i = 0; i < carriers_.size(); ++i)
        carriers_[i]->spawn([this, i] {
            for (int fd : sockets_by_carrier_[i])
                ::shutdown(fd, SHUT_RD);
        });
}

void Connector::join_carriers() {
    // Each waits for its fibers to end. Carrier 0 first: its acceptor is the only fiber that
    // spawns onto the others.
    for (auto& carrier : carriers_)
        carrier->stop();
    carriers_.clear();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
}

void run_until_shutdown(Connector& connector, const std::string& program,
                        const std::vector<Connector*>& companions) {
    try {
        connector.start();
    } catch (const std::exception& e) {
        fail(program, e.what());
    }
    announce_listening(connector.options().host, connector.port());
    wait_for_shutdown_signal();
    // Every port stops at once, and all of them within the application's one grace period.
    std::vector<Connector*> all{&connector};
    all.insert(all.end(), companions.begin(), companions.end());
    for (Connector* each : all)
        each->begin_stop();
    const Deadline give_up_at = deadline_after(connector.options().stop_grace);
    for (Connector* each : all) {
        if (each->stop(give_up_at)) continue;
        std::fprintf(stderr,
                     "%s: %d connections on port %d still busy after %lld ms; exiting without "
                     "them\n",
                     program.c_str(), each->open_connections(), each->port(),
                     static_cast<long long>(connector.options().stop_grace.count()));
        std::fflush(nullptr);
        std::quick_exit(0); // no destructors: the busy fibers still use them
    }
}
