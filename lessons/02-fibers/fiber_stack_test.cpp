// Fiber stacks: under AddressSanitizer (the unit suite also runs in an ASan build, where the first
// test would fail without the bookkeeping in fiber_stack.cpp), and giving back unused pages.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

// Recurses, then throws from the bottom: the unwinding skips `depth` instrumented frames.
int throw_from_depth(int depth) {
    volatile char frame[256];
    frame[0] = static_cast<char>(depth);
    if (depth == 0) throw std::runtime_error("from the bottom");
    return throw_from_depth(depth - 1) + frame[0];
}

// Resident pages of the stack the caller runs on: what RSS counts of it.
std::size_t resident_stack_pages() {
    const StackSpan stack = current_fiber_stack();
    return resident_pages(stack.bottom, stack.top);
}

} // namespace

TEST_CASE("exceptions thrown and caught on many fibers leave their stacks usable",
          "[lesson02][fiber_stack]") {
    std::atomic<int> caught{0};
    {
        Carrier carrier("test-carrier");
        for (int fiber = 0; fiber < 20; ++fiber)
            carrier.spawn([&caught] {
                for (int round = 0; round < 200; ++round) {
                    try {
                        throw_from_depth(round % 16);
                    } catch (const std::runtime_error&) {
                        ++caught;
                    }
                    try {
                        (void)std::stoi("not a number"); // thrown inside libstdc++
                    } catch (const std::invalid_argument&) {
                        ++caught;
                    }
                    boost::this_fiber::yield(); // other fibers reuse nothing of ours meanwhile
                }
            });
    } // stop(): waits for every fiber
    STEP("20 fibers each threw and caught 400 exceptions, yielding in between");
    CHECK(caught == 20 * 400);
}

TEST_CASE("a fiber gives back the stack pages below its stack pointer and keeps its own frames",
          "[lesson02][fiber_stack]") {
    STEP("off a fiber stack nothing is given back");
    CHECK(release_stack_below_here() == 0);
    std::size_t deep = 0, released_bytes = 0, after = 0, again = 0;
    int kept = 0;
    {
        Carrier carrier("test-carrier", {}, 256 * 1024);
        carrier.spawn([&] {
            volatile int mine = 42; // a frame above the stack pointer: must survive
            touch_stack(64 * 1024);
            deep = resident_stack_pages();
            released_bytes = release_stack_below_here();
            after = resident_stack_pages();
            boost::this_fiber::yield(); // parks and resumes on the shallow stack
            kept = mine;
            touch_stack(64 * 1024); // the pages come back, as zeros, when needed
            again = resident_stack_pages();
        });
    }
    STEP("a fiber touched 64 KiB of stack: "
         << deep << " resident pages; released " << released_bytes << " bytes; then " << after
         << " resident pages; " << again << " after touching 64 KiB again");
    CHECK(deep >= 16);
    CHECK(released_bytes >= 64 * 1024);
    CHECK(after + 15 <= deep);
    CHECK(after <= 3);
    CHECK(kept == 42);
    CHECK(again >= 16);
}
