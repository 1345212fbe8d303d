// Unit tests of the idle list's keep-alive timer, on socket pairs and cutoffs, never on timing:
// which connections it closes or lightens, which it leaves, and when it says to look again.
// (What lightening does to a waiting fiber, in detail: reactor_test.)
#include "lessons/03-connector/idle_connections.hpp"

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/all.hpp>
#include <catch2/catch.hpp>

#include <cerrno>
#include <future>
#include <optional>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct SocketPair {
    int fds[2] = {-1, -1};
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0); }
};

// A connection as the list sees it: the server's end (off any carrier here) and the client's.
struct Connection {
    SocketPair pair;
    FiberSocket server{pair.fds[0]}; // closes it
    int client = pair.fds[1];
    ~Connection() { ::close(client); }
    // What the server's end reads now, without waiting: "end of stream", "nothing yet" or bytes.
    std::string server_reads() const {
        char byte;
        const ssize_t n = ::recv(server.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return "end of stream";
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return "nothing yet";
        return n > 0 ? std::string(1, byte) : "error";
    }
};

// A time point strictly between two waits' beginnings.
Clock::time_point tick() {
    std::this_thread::sleep_for(2ms);
    const auto now = Clock::now();
    std::this_thread::sleep_for(2ms);
    return now;
}

} // namespace

TEST_CASE("the keep-alive timeout closes the waits that began before the cutoff, oldest first",
          "[lesson03][idle]") {
    IdleConnections idle(1);
    Connection first, second, third;
    IdleConnections::Waiting a(idle, 0, first.server);
    IdleConnections::Waiting b(idle, 0, second.server);
    const auto between = tick();
    IdleConnections::Waiting c(idle, 0, third.server);
    STEP("three waits; the cutoff falls between the second and the third");

    const auto oldest_left = idle.close_idle_before(0, between);
    CHECK(first.server_reads() == "end of stream");
    CHECK(second.server_reads() == "end of stream");
    CHECK(third.server_reads() == "nothing yet");
    REQUIRE(oldest_left.has_value());
    CHECK(*oldest_left > between); // the third's: when it falls due, the timer looks again
    CHECK(a.end());                // shut: the connection must close
    CHECK(b.end());
    CHECK_FALSE(c.end());
    CHECK(idle.close_idle_before(0, Clock::now() + 1h) == std::nullopt); // nobody left
}

TEST_CASE("the keep-alive timeout spares a connection whose next request has begun to arrive",
          "[lesson03][idle]") {
    IdleConnections idle(1);
    Connection busy, quiet;
    IdleConnections::Waiting a(idle, 0, busy.server);
    IdleConnections::Waiting b(idle, 0, quiet.server);
    REQUIRE(::send(busy.client, "G", 1, 0) == 1);
    STEP("two waits past the cutoff; the older one's next request began (in the kernel, unread)");

    CHECK(idle.close_idle_before(0, Clock::now() + 1h) == std::nullopt);
    CHECK(busy.server_reads() == "G");
    CHECK(quiet.server_reads() == "end of stream");
    CHECK_FALSE(a.end());
    CHECK(b.end());
}

TEST_CASE("the keep-alive timeout of one carrier leaves the other carriers' connections",
          "[lesson03][idle]") {
    IdleConnections idle(2);
    Connection on0, on1;
    IdleConnections::Waiting a(idle, 0, on0.server);
    IdleConnections::Waiting b(idle, 1, on1.server);
    const auto oldest_left = idle.close_idle_before(1, Clock::now() + 1h);
    CHECK(oldest_left == std::nullopt);
    CHECK(on0.server_reads() == "nothing yet");
    CHECK(on1.server_reads() == "end of stream");
    CHECK(idle.any()); // carrier 0's
}

TEST_CASE("lightening asks each connection idle since before the cutoff once, oldest first",
          "[lesson03][idle]") {
    IdleConnections idle(1);
    Connection first, second;
    IdleConnections::Waiting a(idle, 0, first.server);
    const auto between = tick();
    IdleConnections::Waiting b(idle, 0, second.server);
    const auto next = idle.lighten_idle_before(0, between);
    REQUIRE(next.has_value());
    CHECK(*next > between); // the second's wait: not lightened yet
    CHECK(idle.lighten_idle_before(0, between) == next);
    CHECK(idle.lighten_idle_before(0, Clock::now() + 1h) == std::nullopt); // both are now
    CHECK(first.server_reads() == "nothing yet");                          // lightened, not closed
    CHECK_FALSE(a.end());
    CHECK_FALSE(b.end());
}

TEST_CASE("lightening starts where the last one stopped, also after that connection left",
          "[lesson03][idle]") {
    IdleConnections idle(1);
    Connection first, second, third;
    IdleConnections::Waiting a(idle, 0, first.server);
    std::optional<IdleConnections::Waiting> b(std::in_place, idle, 0, second.server);
    CHECK(idle.lighten_idle_before(0, Clock::now() + 1h) == std::nullopt);
    CHECK((a.lightened() && b->lightened()));
    b.reset(); // the newest lightened one leaves the list (its next request came)
    IdleConnections::Waiting c(idle, 0, third.server);
    CHECK(idle.lighten_idle_before(0, Clock::now() + 1h) == std::nullopt);
    CHECK(c.lightened());
    CHECK(idle.lightened() == 3); // each asked once
}

TEST_CASE("lightening reaches the fiber parked on a listed connection", "[lesson03][idle]") {
    IdleConnections idle(1);
    SocketPair pair;
    StackSpan stack;
    std::size_t deep = 0, lightened = 0;
    bool listed = false;
    std::string received;
    std::promise<void> reader_done, lightener_done;
    // Last, so destroyed first: its fibers end before the variables they use.
    Carrier carrier(
        "test-carrier", [] { boost::fibers::use_scheduling_algorithm<Reactor>(); }, 256 * 1024);
    carrier.spawn([&] {
        FiberSocket socket(pair.fds[0]);
        touch_stack(64 * 1024); // its last request went deep
        stack = current_fiber_stack();
        deep = resident_pages(stack.bottom, stack.top);
        IdleConnections::Waiting waiting(idle, 0, socket);
        listed = true;
        char buffer[16] = {};
        const ssize_t n = socket.receive(buffer, sizeof buffer, deadline_after(10s));
        received.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
        reader_done.set_value();
    });
    carrier.spawn([&] {
        while (!listed) // the reader parks in the same turn that lists it
            boost::this_fiber::sleep_for(1ms);
        idle.lighten_idle_before(0, std::chrono::steady_clock::now() + 1h);
        boost::this_fiber::sleep_for(10ms); // the reader lightens and parks again
        lightened = resident_pages(stack.bottom, stack.top);
        [[maybe_unused]] const ssize_t sent = ::write(pair.fds[1], "ping", 4); // read: "ping"
        lightener_done.set_value();
    });
    REQUIRE(lightener_done.get_future().wait_for(10s) == std::future_status::ready);
    REQUIRE(reader_done.get_future().wait_for(10s) == std::future_status::ready);
    STEP("the parked reader's stack: " << deep << " resident pages, " << lightened
                                       << " after the list lightened it");
    CHECK(deep >= 16);
    CHECK(lightened <= 3);
    CHECK(received == "ping");
}
