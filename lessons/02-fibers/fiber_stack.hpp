// The stack every fiber in this repository runs on.
//
// A fiber's stack is memory we allocate, not the thread's. Two things matter:
//  * Size. A stack too small is overwritten silently, so every stack ends in a guard page
//    (boost::context::protected_fixedsize_stack): an overflow faults right there instead of
//    corrupting a neighbour. Only the pages a fiber touches use memory, so a generous size costs
//    address space, not RAM.
//  * AddressSanitizer. Boost.Context switches stacks behind ASan's back (Debian's build uses
//    fcontext, which has no sanitizer annotations): stale poison on reused stacks, and
//    exceptions unwinding a fiber stack, need help. fiber_stack.cpp gives it. ASan's
//    use-after-return detector must stay off (detect_stack_use_after_return=0): its fake frames
//    are freed by stack-pointer comparisons that fiber switches defeat (see lessons/tools/test).
#pragma once

#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstddef>

class FiberStack {
public:
    explicit FiberStack(std::size_t size) : inner_(size) {}

    boost::context::stack_context allocate();
    void deallocate(boost::context::stack_context& stack) noexcept;

private:
    boost::context::protected_fixedsize_stack inner_;
};
