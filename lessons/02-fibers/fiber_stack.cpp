#include "fiber_stack.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(address, size) ASAN_UNPOISON_MEMORY_REGION(address, size)
#else
#define UNPOISON(address, size) ((void)(address), (void)(size))
#endif

namespace {
void unpoison(const boost::context::stack_context& stack) {
    // The stack grows down: sp is its top, sp - size its bottom.
    UNPOISON(static_cast<char*>(stack.sp) - stack.size, stack.size);
}
} // namespace

boost::context::stack_context FiberStack::allocate() {
    boost::context::stack_context stack = inner_.allocate();
    unpoison(stack);
    return stack;
}

void FiberStack::deallocate(boost::context::stack_context& stack) noexcept {
    unpoison(stack);
    inner_.deallocate(stack);
}
