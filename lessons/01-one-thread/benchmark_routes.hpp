// The two endpoints every lesson server has.
//
//   GET /benchmark  waits one second, then answers
//                   {"message":"...","sleep_ms":1000,"thread":"<name#tid>","fiber":false}
//   GET /hello      answers "hello\n" at once: the endpoint for measuring the server itself
//
// Lesson 01 waits with std::this_thread::sleep_for; later lessons pass a fiber-aware wait, and
// that one argument is the whole difference between ten seconds and one.
#pragma once

#include <chrono>
#include <httplib.h>

struct BenchmarkWait {
    const char* name; // shown in the response, e.g. "std::this_thread::sleep_for"
    void (*sleep)(std::chrono::milliseconds); // how the handler waits
};

// Waits with std::this_thread::sleep_for: the calling OS thread can do nothing else meanwhile.
extern const BenchmarkWait thread_sleep;

// `on_fiber` tells whether the handler runs on a fiber right now (the "fiber" field); a server
// without fibers passes nothing.
void add_benchmark_routes(httplib::Server& server, const BenchmarkWait& wait,
                          bool (*on_fiber)() = nullptr,
                          std::chrono::milliseconds duration = std::chrono::seconds(1));
