// The meeting point lesson 08's /request-id parks at: a group goes on when its last member
// arrives, and a caller whose group never fills gives up at its timeout without breaking the
// next group.
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/08-pitfalls/meeting.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/all.hpp>
#include <catch2/catch.hpp>
#include <thread>

// FiberStack: the repository's stacks, which AddressSanitizer builds need (fiber_stack.hpp).

TEST_CASE("three callers on fibers and threads all go on when the third arrives",
          "[lesson08][meeting]") {
    Meeting meeting;
    std::atomic<int> passed{0};
    // Generous: the group fills as soon as the third caller runs; only a bug waits this long.
    const std::chrono::seconds timeout{60};
    boost::fibers::fiber first(std::allocator_arg, FiberStack(64 * 1024),
                               [&] { passed += meeting.wait(3, timeout); });
    std::thread second([&] { passed += meeting.wait(3, timeout); }); // a plain thread meets too
    boost::fibers::fiber third(std::allocator_arg, FiberStack(64 * 1024),
                               [&] { passed += meeting.wait(3, timeout); });
    first.join();
    third.join();
    second.join();
    CHECK(passed == 3);
}

TEST_CASE("a caller alone gives up at its timeout, and the next group still meets",
          "[lesson08][meeting]") {
    Meeting meeting;
    STEP("one caller waits for a group of two that nobody else joins");
    CHECK_FALSE(meeting.wait(2, std::chrono::milliseconds(50)));
    STEP("then two callers arrive for a group of two");
    bool first_met = false, second_met = false;
    boost::fibers::fiber first(std::allocator_arg, FiberStack(64 * 1024),
                               [&] { first_met = meeting.wait(2, std::chrono::seconds(60)); });
    boost::fibers::fiber second(std::allocator_arg, FiberStack(64 * 1024),
                                [&] { second_met = meeting.wait(2, std::chrono::seconds(60)); });
    first.join();
    second.join();
    CHECK(first_met);
    CHECK(second_met);
}
