// Fuzz target of exercise 09 (libFuzzer; fuzz/run builds and runs it with clang++).
//
// The input is what a client sends. Its head, cut at the first CRLF CRLF as the connector cuts
// it, goes to your guard_head(). Whatever the guard admits goes on to cpp-httplib's own parser,
// which must read exactly the request line and headers the guard checked (the same property
// the graded tests check, on inputs the fuzzer invents). A disagreement stops the fuzzer with
// the story, and libFuzzer saves the input that caused it.
#include "exercises/09-guard-that-frames/tests/parser_view.hpp"
#include "head_guard.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const std::size_t end = input.find("\r\n\r\n");
    if (end == std::string::npos) return 0; // the connector would wait for the rest
    const std::string head = input.substr(0, end + 4);
    if (!guard_head(head).admitted) return 0;
    const std::string mismatch = framing_mismatch(head);
    if (mismatch.empty()) return 0;
    std::fprintf(stderr, "\nFINDING: the guard admitted '%s'\n  %s\n", spelled_out(head).c_str(),
                 mismatch.c_str());
    std::abort();
}
