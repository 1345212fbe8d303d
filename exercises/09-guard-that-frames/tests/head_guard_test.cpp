// Graded tests of exercise 09. Each head goes to your guard_head(); a head it admits goes on to
// cpp-httplib 0.11.4's own parser (tests/parser_view.hpp), which must read exactly the request
// line and headers the guard checked. No server, no socket, no clang: the parser runs in-process.
#include "exercises/09-guard-that-frames/tests/parser_view.hpp"
#include "head_guard.hpp"
#include "lessons/common/test_support.hpp" // STEP()

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <strings.h>
#include <vector>

namespace {

std::string verdict(const HeadVerdict& v) {
    return v.admitted ? std::string("admitted")
                      : "refused " + std::to_string(v.status) + " (" + v.reason + ")";
}

// Well-formed heads, as clients send them: the guard must admit every one.
const std::vector<std::string> well_formed = {
    "GET / HTTP/1.1\r\nHost: example\r\n\r\n",
    "GET /hello?name=x HTTP/1.1\r\nHost: example\r\nUser-Agent: curl/7.88\r\nAccept: */*\r\n\r\n",
    "HEAD /work HTTP/1.0\r\n\r\n",
    "GET /file HTTP/1.1\r\nHost: example\r\nRange: bytes=0-1023\r\nConnection: keep-alive\r\n\r\n",
    "GET /a%20b HTTP/1.1\r\nHost: example\r\nX-Trace:  id-7 \t\r\nContent-Length: 0\r\n\r\n",
};

// The part of `bytes` the connector would hand the guard: up to the first CRLF CRLF.
std::string head_of(const std::string& bytes) {
    const std::size_t end = bytes.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : bytes.substr(0, end + 4);
}

// A small mutator, deterministic (fixed seed), in the spirit of the fuzz target: line ends
// broken or moved, bytes inserted and removed, header lines duplicated or smuggled in.
class Mutator {
public:
    std::string operator()(std::string head) {
        const int edits = 1 + static_cast<int>(pick(3));
        for (int i = 0; i < edits && !head.empty(); ++i) {
            const std::size_t at = pick(head.size());
            switch (pick(6)) {
            case 0: { // a CRLF loses its CR or its LF
                const std::size_t crlf = head.find("\r\n", at);
                if (crlf != std::string::npos) head.erase(crlf + pick(2), 1);
                break;
            }
            case 1: // a byte from the head's own alphabet
                head.insert(at, 1, "\r\n: \tH-a0"[pick(10)]);
                break;
            case 2:
                head.erase(at, 1);
                break;
            case 3: { // a header a guard must see, smuggled in mid-line
                const std::string smuggled[] = {"\nTransfer-Encoding: chunked",
                                                "\nContent-Length: 7", "\nHost: other",
                                                "\r\nTransfer-Encoding: chunked",
                                                "\nRange: bytes=" + std::string(80, '1') + "-"};
                head.insert(at, smuggled[pick(5)]);
                break;
            }
            case 4: { // a line repeated
                const std::size_t begin = head.rfind("\r\n", at);
                const std::size_t end = head.find("\r\n", at);
                if (begin != std::string::npos && end != std::string::npos && end > begin)
                    head.insert(end, head.substr(begin, end - begin));
                break;
            }
            default: // a bare line end where a CRLF is
                head.insert(at, pick(2) ? "\n" : "\r");
                break;
            }
        }
        return head;
    }

private:
    std::size_t pick(std::size_t below) {
        return std::uniform_int_distribution<std::size_t>(0, below - 1)(random_);
    }
    std::mt19937 random_{20261202};
};

} // namespace

// ---------------------------------------------------------------- task 1

TEST_CASE("your smuggling head hides a header the guard checks from a reading that splits at CRLF",
          "[ex9][task_1][points=2]") {
    const std::string head = smuggling_head();
    STEP("smuggling_head() returned '" << spelled_out(head) << "'");
    const bool whole = head.size() >= 4 && head.find("\r\n\r\n") == head.size() - 4;
    INFO("a request head ends at its first CRLF CRLF, and nothing follows it");
    REQUIRE(whole);
    const HeadReading rfc = read_as_rfc(head);
    const HeadReading library = read_as_httplib(head);
    STEP("a guard that splits at CRLF reads " << described(rfc));
    STEP("cpp-httplib reads " << described(library));
    // A header (name and value) cpp-httplib holds that the CRLF reading has no line for; the
    // dangerous kind is one the guard exists to check.
    std::string unseen, dangerous;
    for (const auto& header : library.headers) {
        if (std::find(rfc.headers.begin(), rfc.headers.end(), header) != rfc.headers.end())
            continue;
        unseen = header.first;
        for (const char* checked : {"Transfer-Encoding", "Content-Length", "Range", "Host"})
            if (::strcasecmp(header.first.c_str(), checked) == 0) dangerous = header.first;
    }
    STEP("a header cpp-httplib read that the CRLF reading has no line for: '"
         << (unseen.empty() ? "(none)" : unseen) << "'; one the guard checks: '"
         << (dangerous.empty() ? "(none)" : dangerous) << "'");
    CHECK(library.parsed);
    CHECK_FALSE(unseen.empty());
    CHECK_FALSE(dangerous.empty());
}

// ---------------------------------------------------------------- task 2

TEST_CASE("the guard refuses headers smuggled behind a bare LF", "[ex9][task_2][points=2]") {
    const std::vector<std::string> smuggling = {
        "GET / HTTP/1.1\r\nHost: a\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\nContent-Length: 5\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\nRange: bytes=" + std::string(200, '1') + "-\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: y\nHost: b\r\n\r\n",
        smuggling_head(),
    };
    int refused = 0;
    std::string story;
    for (const std::string& head : smuggling) {
        const HeadVerdict v = guard_head(head);
        story += "\n  '" + spelled_out(head.substr(0, 70)) + (head.size() > 70 ? "...'" : "'") +
                 ": " + verdict(v);
        refused += v.admitted ? 0 : 1;
    }
    STEP("the guard's verdicts (the last head is your smuggling_head()):" << story);
    CHECK(refused == static_cast<int>(smuggling.size()));
}

TEST_CASE("the guard refuses a bare CR or LF anywhere in the head with 400",
          "[ex9][task_2][points=1]") {
    const std::vector<std::string> bare = {
        "GET / HTTP/1.1\r\nHost: a\nAccept: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\rAccept: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nAccept: b\n\r\n\r\n",
        "GET / HTTP/1.1\r\nX: \r\r\n\r\n",
    };
    for (const std::string& head : bare) {
        const HeadVerdict v = guard_head(head);
        STEP("'" << spelled_out(head) << "': " << verdict(v));
        CHECK_FALSE(v.admitted);
        CHECK(v.status == 400);
    }
}

TEST_CASE("whatever the guard admits of 3000 mutated heads cpp-httplib reads just as it did",
          "[ex9][task_2][points=3]") {
    int admitted_well_formed = 0;
    std::string refused_well_formed;
    for (const std::string& head : well_formed) {
        const HeadVerdict v = guard_head(head);
        if (v.admitted && framing_mismatch(head).empty()) {
            ++admitted_well_formed;
        } else {
            refused_well_formed += "\n  '" + spelled_out(head) + "': " + verdict(v);
        }
    }
    STEP(admitted_well_formed << " of " << well_formed.size() << " well-formed heads admitted"
                              << refused_well_formed);
    Mutator mutate;
    int tried = 0, admitted = 0, disagreed = 0;
    std::string first;
    for (int i = 0; i < 3000; ++i) {
        const std::string head =
            head_of(mutate(well_formed[static_cast<std::size_t>(i) % well_formed.size()]));
        if (head.empty()) continue; // no end of head: the connector would wait for more
        ++tried;
        if (!guard_head(head).admitted) continue;
        ++admitted;
        const std::string mismatch = framing_mismatch(head);
        if (mismatch.empty()) continue;
        if (++disagreed == 1) first = "'" + spelled_out(head) + "' was admitted; " + mismatch;
    }
    STEP(tried << " mutated heads tried, " << admitted << " admitted, " << disagreed
               << " of those read differently by cpp-httplib");
    STEP((first.empty() ? "none disagreed" : "the first: " + first));
    CHECK(admitted_well_formed == static_cast<int>(well_formed.size()));
    CHECK(disagreed == 0);
}
