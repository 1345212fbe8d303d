// Tests of the stream under the connector: bytes as a client really sends them, several requests
// in one write (pipelining), so each read of the socket may end anywhere in the batch.
#include "lessons/03-connector/connector.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <memory>

namespace {

using namespace std::chrono_literals;

// A GET /hello of exactly `size` bytes: padded with a header, as browsers' cookies pad theirs.
std::string request_of_size(std::size_t size) {
    const std::string start = "GET /hello HTTP/1.1\r\nHost: test\r\nX-Pad: ";
    const std::string end = "\r\n\r\n";
    REQUIRE(size >= start.size() + end.size());
    return start + std::string(size - start.size() - end.size(), 'p') + end;
}

} // namespace

TEST_CASE("every request of a pipelined batch is answered, whatever the requests' size",
          "[lesson03][connector]") {
    HttpApp app;
    app.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("hello\n", "text/plain");
    });
    ConnectorOptions options;
    options.port = 0;
    // A request left unread in the kernel would wait for this, and then the connection closes:
    // a stall shows as missing answers. Any answer at all arrives far sooner, even under load.
    options.keep_alive_timeout = 500ms;
    Connector connector(app, options);
    connector.start();
    const int batch = 9;
    for (const std::size_t size : {256u, 300u, 512u, 1024u, 2048u, 4096u}) {
        RawConnection client(connector.port());
        std::string requests;
        for (int i = 0; i < batch; ++i)
            requests += request_of_size(size);
        REQUIRE(client.send(requests));
        int answered = 0;
        std::string last;
        while (answered < batch) {
            last = client.receive_response(10s);
            if (status_of(last) != 200 || body_of(last) != "hello\n") break;
            ++answered;
        }
        INFO("sent " << batch << " pipelined GET /hello of " << size << " bytes in one write; "
                     << answered << " answered, then "
                     << (last.empty() ? "the connection closed" : "'" + last.substr(0, 40) + "'"));
        CHECK(answered == batch);
    }
}
