// Fiber stacks under AddressSanitizer: the unit suite also runs in an ASan build, where these
// would fail without the bookkeeping in fiber_stack.cpp.
#include "lessons/02-fibers/carrier.hpp"
#include "lessons/common/test_support.hpp"

#include <boost/fiber/operations.hpp>
#include <catch2/catch.hpp>

#include <atomic>
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
