// The HTTP client against hostile servers (issue 26, case 5): a fake downstream on loopback
// (fake_downstream.hpp) that trickles, floods header lines, announces a 4 GiB body, answers
// chunked or sends a head no parser should agree on. The client runs where lesson 07 runs it,
// as a fiber on a reactor carrier. Every verdict is a kind of failure, a message or a named
// limit; where time is checked, the bound is the call's own deadline plus 2 s, which a client
// that honours its deadline meets on any machine, and one that does not (the fake keeps at it
// for 10 s) misses.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/guard/request_guard.hpp" // spelled_out
#include "lessons/03-connector/reactor.hpp"
#include "lessons/common/test_support.hpp"
#include "lessons/instruments/client/fake_downstream.hpp"
#include "lessons/instruments/client/http_client.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using Kind = HttpClientError::Kind;

Carrier::SchedulerSetup reactor() {
    return [] { use_carrier_algorithm<Reactor>(); };
}

struct Call {
    bool answered = false;
    HttpResponse response;
    HttpClientFailure failure;
    double seconds = 0;
    bool usable_after = true; // still_open() after the call
};

// Opens a connection to `fake` on a fiber of `carrier` and GETs /inventory with `deadline_in`.
// Waits for the fiber up to a minute: the hostile scripts give up after 10 s even when the
// client does not.
Call call(Carrier& carrier, const FakeDownstream& fake, std::chrono::milliseconds deadline_in) {
    auto done = std::make_shared<std::promise<Call>>();
    auto result = done->get_future();
    carrier.spawn([&fake, deadline_in, done] {
        Call call;
        const auto start = std::chrono::steady_clock::now();
        const Deadline deadline = start + deadline_in;
        auto connection =
            HttpClientConnection::open("127.0.0.1", fake.port(), deadline, call.failure);
        if (connection) {
            call.answered =
                connection->try_get("/inventory", deadline, call.response, call.failure);
            call.usable_after = connection->still_open();
        }
        call.seconds = seconds_since(start);
        done->set_value(std::move(call));
    });
    REQUIRE(result.wait_for(60s) == std::future_status::ready);
    return result.get();
}

// A script that sends `bytes` as its answer, then waits for the client to hang up.
FakeDownstream::Script answer_with(const std::string& bytes) {
    return [bytes](FakeDownstream::Peer& peer) {
        if (peer.read_request() && peer.send(bytes)) peer.read_request();
    };
}

} // namespace

TEST_CASE("a server flooding header lines fails the call at the head limit, not the deadline",
          "[lesson03][client]") {
    FakeDownstream fake(flood_header_lines);
    Carrier carrier("client", reactor());
    STEP("a server sends 'HTTP/1.1 200 OK' and then 1,000-byte header lines without end");
    const Call flood = call(carrier, fake, 5s);
    STEP("the call returned after " << flood.seconds << " s: " << flood.failure.what);
    CHECK_FALSE(flood.answered);
    CHECK(flood.failure.kind == Kind::transport);
    CHECK(flood.failure.what == "no end of the response head within " +
                                    std::to_string(max_response_head_bytes) + " bytes");
    CHECK(flood.seconds < 5 + 2);
    CHECK_FALSE(flood.usable_after);
}

TEST_CASE("a server trickling its head cannot stretch a call past the deadline",
          "[lesson03][client]") {
    FakeDownstream fake(trickle_header);
    Carrier carrier("client", reactor());
    STEP("a server sends one header byte every 10 ms, a 500 ms deadline");
    const Call trickle = call(carrier, fake, 500ms);
    STEP("the call returned after " << trickle.seconds << " s: " << trickle.failure.what);
    CHECK_FALSE(trickle.answered);
    CHECK(trickle.failure.kind == Kind::response_timeout);
    CHECK(trickle.seconds < 0.5 + 2);
    CHECK_FALSE(trickle.usable_after);
}

TEST_CASE("a Content-Length over the body limit is refused before the body is read",
          "[lesson03][client]") {
    FakeDownstream fake(huge_content_length);
    Carrier carrier("client", reactor());
    STEP("a server announces 4 GiB of body and sends it as fast as it can");
    const Call huge = call(carrier, fake, 5s);
    STEP("the call returned after " << huge.seconds << " s: " << huge.failure.what);
    CHECK_FALSE(huge.answered);
    CHECK(huge.failure.kind == Kind::transport);
    CHECK(huge.failure.what == "Content-Length '4294967296' is over the limit of " +
                                   std::to_string(max_response_body_bytes) + " bytes");
    CHECK(huge.seconds < 5 + 2);
}

TEST_CASE("a chunked answer is refused, and the connection is not used again",
          "[lesson03][client]") {
    FakeDownstream fake(chunked_answer);
    Carrier carrier("client", reactor());
    STEP("a server answers with Transfer-Encoding: chunked, which this client does not read");
    const Call chunked = call(carrier, fake, 5s);
    STEP("the call: " << (chunked.answered ? "answered " + std::to_string(chunked.response.status)
                                           : "failed: " + chunked.failure.what));
    CHECK_FALSE(chunked.answered);
    CHECK(chunked.failure.kind == Kind::transport);
    CHECK(chunked.failure.what == "Transfer-Encoding 'chunked', which this client cannot read");
    // What followed the head ("5\r\nhello...") must never be read as the next response.
    CHECK_FALSE(chunked.usable_after);
}

TEST_CASE("a response whose end is in doubt is refused, however the server spells it",
          "[lesson03][client]") {
    // Each would frame differently in some parser, or not at all in ours.
    const auto [bytes, why] = GENERATE(table<std::string, std::string>({
        {"HTTP/1.1 2000 OK\r\nContent-Length: 5\r\n\r\nhello", "a four-digit status"},
        {"HTTP/1.1 20 OK\r\nContent-Length: 5\r\n\r\nhello", "a two-digit status"},
        {"HTTP/2 200 OK\r\nContent-Length: 5\r\n\r\nhello", "not HTTP/1.x"},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
         "an interim 1xx answer"},
        {"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", "a signed Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", "a list as Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
         "two Content-Length lines"},
        {"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", "a space before the colon"},
        {"HTTP/1.1 200 OK\r\nX: a\nContent-Length: 5\r\n\r\nhello", "a bare LF in the head"},
        {"HTTP/1.1 200 OK\r\nX: a\r\n Content-Length: 5\r\n\r\nhello", "a folded line"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nhello",
         "a length that overflows"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello",
         "Transfer-Encoding beside Content-Length"},
    }));
    FakeDownstream fake(answer_with(bytes));
    Carrier carrier("client", reactor());
    STEP("a server answers with " << why << ": " << spelled_out(bytes));
    const Call answer = call(carrier, fake, 5s);
    STEP("the call: " << (answer.answered ? "answered " + std::to_string(answer.response.status)
                                          : "failed: " + answer.failure.what));
    CHECK_FALSE(answer.answered);
    CHECK(answer.failure.kind == Kind::transport);
    CHECK_FALSE(answer.usable_after);
}

TEST_CASE("parsers that share a budget hold no more than it, and give back what they took",
          "[lesson03][client]") {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"; // 38 bytes
    ResponseBudget budget(100);
    auto first =
        std::make_unique<ResponseParser>(max_response_head_bytes, max_response_body_bytes, &budget);
    CHECK(first->feed(head + std::string(10, 'x')) == head.size() + 10);
    STEP("a head announcing 50 bytes, and 10 of them: " << budget.in_use() << " bytes held");
    CHECK(budget.in_use() == head.size() + 50); // the head, and the whole body at once
    {
        ResponseParser second(max_response_head_bytes, max_response_body_bytes, &budget);
        second.feed(head);
        STEP("a second response on the same budget: " << second.error());
        CHECK(second.state() == ResponseParser::State::refused);
        CHECK(second.over_budget());
        CHECK(second.error() ==
              "over the memory budget of 100 bytes that responses may hold at once");
    }
    CHECK(budget.refusals() == 1);
    CHECK(budget.in_use() == head.size() + 50); // the refused one holds nothing
    CHECK(first->feed(std::string(40, 'x')) == 40);
    CHECK(first->state() == ResponseParser::State::complete);
    CHECK(budget.in_use() == head.size() + 50);
    first.reset();
    CHECK(budget.in_use() == 0);
}

TEST_CASE("a response framed by the close, by 204, or followed by stray bytes is not kept",
          "[lesson03][client]") {
    struct Case {
        std::string bytes, story;
        int status;
        std::string body;
        bool kept;
    };
    const Case c = GENERATE(values<Case>({
        {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end", "no length, closed", 200,
         "to the end", false},
        {"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "204 with a length", 204, "",
         true},
        {"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok",
         "close in a list", 200, "ok", false},
        {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.0", 200, "ok", false},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n", "stray bytes", 200,
         "ok", false},
        {"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", "no reason phrase", 200, "ok", true},
    }));
    // The close-delimited answer ends when the server hangs up: this script does at once.
    FakeDownstream fake([&c](FakeDownstream::Peer& peer) {
        if (peer.read_request() && peer.send(c.bytes) && c.kept) peer.read_request();
    });
    Carrier carrier("client", reactor());
    STEP("a server answers (" << c.story << "): " << spelled_out(c.bytes));
    const Call answer = call(carrier, fake, 5s);
    STEP("the call: " << (answer.answered ? "answered " + std::to_string(answer.response.status)
                                          : "failed: " + answer.failure.what));
    REQUIRE(answer.answered);
    CHECK(answer.response.status == c.status);
    CHECK(answer.response.body == c.body);
    CHECK(answer.response.keep_alive == c.kept);
    CHECK(answer.usable_after == c.kept);
}

TEST_CASE("a fiber reading a response that is all there lets its carrier's fibers run between "
          "reads",
          "[lesson03][client]") {
    // Bytes that are always there never make a read wait, so the reading fiber never parks: a
    // flood would keep the carrier to itself. The response (32 KiB, eight reads of 4 KiB) is all
    // in the client's socket before the client reads a byte, and another fiber of the carrier
    // looks at how much of it is left whenever it gets a turn.
    const std::string body(32 * 1024, 'a');
    const std::string response =
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::atomic<bool> request_read{false}, release{false};
    FakeDownstream fake([&](FakeDownstream::Peer& peer) {
        if (!peer.read_request()) return;
        request_read = true;
        while (!release)
            std::this_thread::sleep_for(1ms);
        if (peer.send(response)) peer.read_request();
    });
    Carrier carrier("client", reactor());
    std::atomic<bool> read_done{false};
    std::promise<Call> reader_result;
    carrier.spawn([&] {
        Call reader;
        auto connection = HttpClientConnection::open("127.0.0.1", fake.port(), deadline_after(20s),
                                                     reader.failure);
        if (connection)
            reader.answered = connection->try_get("/inventory", deadline_after(20s),
                                                  reader.response, reader.failure);
        read_done = true;
        reader_result.set_value(reader);
    });
    STEP("the reader sent its request and waits for the answer");
    REQUIRE(eventually([&] { return request_read.load(); }));
    std::promise<int> turns_result;
    carrier.spawn([&] {
        // This fiber holds the carrier (no fiber-aware wait) until the whole response sits in
        // the reader's socket: the reader cannot read a byte of it before.
        release = true;
        const auto unread = [&] {
            for (const TcpSocket& socket : tcp_sockets_of(::getpid()))
                if (socket.remote_port == fake.port()) return socket.rx_queue;
            return std::size_t{0};
        };
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (unread() < response.size() && std::chrono::steady_clock::now() < give_up) {
        }
        int turns_while_reading = 0; // turns that saw part of the response read, not all
        while (!read_done) {
            boost::this_fiber::yield();
            const std::size_t left = unread();
            if (!read_done && left > 0 && left < response.size()) ++turns_while_reading;
        }
        turns_result.set_value(turns_while_reading);
    });
    const int turns = turns_result.get_future().get();
    const Call reader = reader_result.get_future().get();
    STEP("the reader got " << (reader.answered
                                   ? std::to_string(reader.response.body.size()) + " bytes of body"
                                   : "no answer: " + reader.failure.what));
    REQUIRE(reader.answered);
    CHECK(reader.response.body == body);
    STEP("the other fiber ran " << turns << " times while the response was partly read");
    CHECK(turns >= 1);
}

TEST_CASE("a URL must name an IPv4 address and a port from 1 to 65535 and nothing more",
          "[lesson03][client]") {
    // Each of these was once taken: port 70000 became 4464 (a request went to whoever listened
    // there), -1 became 65535, "80x" became 80, and a name failed only at the first request.
    for (const std::string url :
         {"http://127.0.0.1:70000/x", "http://127.0.0.1:-1/x", "http://127.0.0.1:80x/x",
          "http://127.0.0.1:0/x", "http://127.0.0.1:/x", "http://example.com:80/x",
          "ftp://127.0.0.1/x"}) {
        std::string host, path;
        int port = 0;
        STEP(url);
        CHECK_THROWS_AS(split_url(url, host, port, path), std::invalid_argument);
    }
    std::string host, path;
    int port = 0;
    split_url("http://localhost:8080/work?x=1", host, port, path);
    CHECK(host == "127.0.0.1");
    CHECK(port == 8080);
    CHECK(path == "/work?x=1");
    split_url("http://10.0.0.1", host, port, path);
    CHECK(port == 80);
    CHECK(path == "/");
}
