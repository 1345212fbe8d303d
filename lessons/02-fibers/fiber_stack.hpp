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
// And one more: a page a deep call touched stays resident after the call returns. A fiber about to
// park for long can give such pages back (release_stack_below_here, below).
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

// The calling fiber's stack, [bottom, top), guard page included; empty (nullptrs) when the caller
// runs on a thread's own stack or on a stack FiberStack did not allocate.
struct StackSpan {
    char* bottom = nullptr;
    char* top = nullptr;
};
StackSpan current_fiber_stack();

// Gives the kernel back the pages of the calling fiber's stack below its stack pointer
// (madvise MADV_DONTNEED; they read as zeros if touched again). Deep calls that returned, like
// cpp-httplib's std::regex router, leave pages resident that a parked fiber does not need: call it
// before a long wait (Photon does the same). Costs one system call, and a page fault per page
// touched again later. Returns the bytes given back (0 off a fiber stack).
std::size_t release_stack_below_here();
