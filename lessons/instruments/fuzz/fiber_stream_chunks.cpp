// Fuzz target: FiberStream over a socketpair, fed arbitrary bytes in arbitrary chunks.
//
// The input's first bytes are a script (the writer's chunk sizes, the reader's read sizes, the
// head limit); the rest is the payload. On one carrier with the Reactor, as in the connector, a
// writer fiber sends the payload in those chunks through one end of a socketpair, yielding between
// them, then closes it; a reader fiber reads the other end through a FiberStream the way the
// connector does: wait_for_request, read_head, then read() in the scripted sizes. Properties:
// no crash or undefined behaviour, nothing hangs, read_head answers what the bytes call for
// (complete exactly when an empty line ends a head within the limit), head() is the bytes up to
// it, and everything read() returns is exactly the payload, in order.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/fiber_socket.hpp"
#include "lessons/03-connector/fiber_stream.hpp"
#include "lessons/03-connector/reactor.hpp"

#include <boost/fiber/operations.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <fuzzer/FuzzedDataProvider.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;

// Far longer than any step takes on a busy machine: passing it means something hangs.
constexpr auto patience = 10s;

[[noreturn]] void finding(const std::string& what, const std::string& payload, std::size_t at) {
    std::fprintf(stderr, "\nFINDING: %s\n  at byte %zu of a %zu-byte payload\n", what.c_str(), at,
                 payload.size());
    std::abort();
}

struct Script {
    std::vector<std::size_t> chunks; // the writer's send sizes, used in turn
    std::vector<std::size_t> reads;  // the reader's read() sizes, used in turn
    std::size_t max_head = 0;
    std::string payload;
};

Script script_from(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    Script script;
    for (int i = 0; i < 4; ++i) {
        script.chunks.push_back(in.ConsumeIntegralInRange<std::size_t>(1, 3000));
        script.reads.push_back(in.ConsumeIntegralInRange<std::size_t>(1, 3000));
    }
    script.max_head = in.ConsumeIntegralInRange<std::size_t>(1, 5000);
    script.payload = in.ConsumeRemainingBytesAsString();
    return script;
}

void write_payload(int fd, const Script& script) {
    FiberSocket socket(fd);
    const std::string& payload = script.payload;
    for (std::size_t sent = 0, turn = 0; sent < payload.size(); ++turn) {
        const std::size_t chunk =
            std::min(script.chunks[turn % script.chunks.size()], payload.size() - sent);
        if (!socket.send_all(payload.data() + sent, chunk, deadline_after(patience)))
            finding("the writer could not send", payload, sent);
        sent += chunk;
        boost::this_fiber::yield(); // let the reader see a partial head
    }
    ::shutdown(fd, SHUT_WR);
}

// What read_head must answer when `payload` from `at` on is all the peer will ever send.
FiberStream::Head expected_head(const std::string& payload, std::size_t at, std::size_t max) {
    const std::size_t blank = payload.find("\r\n\r\n", at);
    if (blank != std::string::npos && blank + 4 - at <= max) return FiberStream::Head::complete;
    if (blank != std::string::npos || payload.size() - at >= max)
        return FiberStream::Head::too_large;
    return FiberStream::Head::closed;
}

void read_payload(int fd, const Script& script) {
    FiberSocket socket(fd);
    FiberStream stream(socket, patience, patience);
    const std::string& payload = script.payload;
    std::string got;
    std::vector<char> buffer(3000);
    for (std::size_t turn = 0;; ++turn) {
        const auto arrival = stream.wait_for_request(deadline_after(patience));
        if (arrival == FiberStream::Arrival::timeout)
            finding("wait_for_request timed out", payload, got.size());
        if (arrival == FiberStream::Arrival::closed) break;
        const auto head = stream.read_head(script.max_head, deadline_after(patience));
        if (head != expected_head(payload, got.size(), script.max_head))
            finding("read_head answered " + std::to_string(static_cast<int>(head)) +
                        ", the bytes call for " +
                        std::to_string(
                            static_cast<int>(expected_head(payload, got.size(), script.max_head))),
                    payload, got.size());
        if (head == FiberStream::Head::complete &&
            stream.head() != payload.substr(got.size(), stream.head().size()))
            finding("head() is not the bytes that were sent", payload, got.size());
        // read_head has seen the end of the stream, as the connector does before it closes:
        // what is still buffered must read back, then read() must say "closed" again.
        if (head == FiberStream::Head::closed) break;
        const std::size_t want = script.reads[turn % script.reads.size()];
        const ssize_t n = stream.read(buffer.data(), want);
        if (n < 0) finding("read() failed", payload, got.size());
        if (n == 0) break;
        got.append(buffer.data(), static_cast<std::size_t>(n));
        if (got.compare(0, got.size(), payload, 0, got.size()) != 0)
            finding("read() returned bytes that were not sent there", payload, got.size());
    }
    for (;;) { // what is still buffered, then the end of the stream
        const ssize_t n = stream.read(buffer.data(), buffer.size());
        if (n < 0) finding("read() failed after the end of the stream", payload, got.size());
        if (n == 0) break;
        got.append(buffer.data(), static_cast<std::size_t>(n));
    }
    if (got != payload) finding("read() ended early", payload, got.size());
}

// Runs `task` as a fiber on `carrier`; aborts on an exception (a finding, not a crash).
std::future<void> on_carrier(Carrier& carrier, std::function<void()> task) {
    auto done = std::make_shared<std::promise<void>>();
    carrier.spawn([task = std::move(task), done] {
        try {
            task();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "\nFINDING: exception on the carrier: %s\n", e.what());
            std::abort();
        }
        done->set_value();
    });
    return done->get_future();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Script script = script_from(data, size);
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) != 0) {
        std::perror("socketpair");
        std::abort();
    }
    // A carrier of its own for every input, so that no state carries over from one to the next.
    Carrier carrier(
        "fuzz-carrier", [] { use_carrier_algorithm<Reactor>(); }, 64 * 1024);
    auto reader = on_carrier(carrier, [&] { read_payload(ends[0], script); });
    auto writer = on_carrier(carrier, [&] { write_payload(ends[1], script); });
    if (writer.wait_for(patience * 3) != std::future_status::ready ||
        reader.wait_for(patience * 3) != std::future_status::ready)
        finding("the writer or the reader hangs", script.payload, 0);
    carrier.stop();
    return 0;
}
