#include "lessons/02-fibers/fiber_stack.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace {

// Every live fiber stack, so that a fiber can find its own from an address on it (and so can
// AddressSanitizer's helpers below). Touched once per fiber start and end, and per release.
std::mutex stacks_mutex;
std::map<std::uintptr_t, std::uintptr_t> stacks; // bottom -> top of every live fiber stack

void remember(const boost::context::stack_context& stack, bool live) {
    const auto top = reinterpret_cast<std::uintptr_t>(stack.sp);
    std::lock_guard<std::mutex> lock(stacks_mutex);
    if (live) {
        stacks[top - stack.size] = top;
    } else {
        stacks.erase(top - stack.size);
    }
}

StackSpan stack_at(std::uintptr_t at) {
    std::lock_guard<std::mutex> lock(stacks_mutex);
    auto above = stacks.upper_bound(at);
    if (above == stacks.begin()) return {};
    const auto [bottom, top] = *std::prev(above);
    if (at >= top) return {};
    return {reinterpret_cast<char*>(bottom), reinterpret_cast<char*>(top)};
}

} // namespace

StackSpan current_fiber_stack() {
    char here;
    return stack_at(reinterpret_cast<std::uintptr_t>(&here));
}

std::size_t release_stack_below_here() {
    // The wait that follows calls a little deeper than this frame (the scheduler, the switch):
    // the page those frames need stays, so that they do not fault it straight back in.
    constexpr std::uintptr_t kept_below = 512;
    char here;
    const auto at = reinterpret_cast<std::uintptr_t>(&here);
    const StackSpan stack = stack_at(at);
    if (stack.bottom == nullptr) return 0;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t from = reinterpret_cast<std::uintptr_t>(stack.bottom) + page; // guard
    const std::uintptr_t to = (at - kept_below) & ~(page - 1);
    if (to <= from) return 0;
    if (::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED) != 0) return 0;
    return to - from;
}

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <sanitizer/asan_interface.h>

// AddressSanitizer support for fiber stacks. Without it, ASan reports errors that are not there:
//  1. A stack handed to a new fiber may still carry poison from the frames of the fiber that
//     used it before. We unpoison every stack when it is handed out and when it comes back.
//  2. An exception abandons the frames between the throw and the catch, with their poison
//     (redzones, and locals the unwinding code marks out of scope). For a thread's stack ASan
//     clears that itself (__asan_handle_no_return); on a fiber stack it does not know the
//     bounds, prints "ignoring requested __asan_handle_no_return", and the next calls that
//     reuse those addresses trip over the stale poison. So we interpose the C++ runtime's
//     throw and catch entry points (every throw in the process goes through them, in our code
//     and in the libraries') and do what ASan does for threads: when an exception is thrown on
//     a fiber stack, unpoison that stack; when it is caught, unpoison everything below the
//     catching frame, which is dead by then.
namespace {

void unpoison(const boost::context::stack_context& stack) {
    // The stack grows down: sp is its top, sp - size its bottom.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(stack.sp) - stack.size, stack.size);
}

// Unpoisons the fiber stack that `address` lies on, from its bottom up to `address`, or to its
// top when `whole` (nothing happens on a thread's own stack: ASan looks after those).
void unpoison_fiber_stack_at(const char* address, bool whole) {
    const StackSpan stack = stack_at(reinterpret_cast<std::uintptr_t>(address));
    if (stack.bottom == nullptr) return;
    char* const end = whole ? stack.top : const_cast<char*>(address);
    ASAN_UNPOISON_MEMORY_REGION(stack.bottom, static_cast<std::size_t>(end - stack.bottom));
}

template <typename Function> Function next_definition(const char* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

[[noreturn]] void __cxa_throw(void* exception, void* type, void (*destroy)(void*)) {
    static const auto next =
        next_definition<void (*)(void*, void*, void (*)(void*))>("__cxa_throw");
    char here;
    unpoison_fiber_stack_at(&here, true);
    next(exception, type, destroy);
    __builtin_unreachable();
}

[[noreturn]] void __cxa_rethrow() {
    static const auto next = next_definition<void (*)()>("__cxa_rethrow");
    char here;
    unpoison_fiber_stack_at(&here, true);
    next();
    __builtin_unreachable();
}

void* __cxa_begin_catch(void* exception) noexcept {
    static const auto next = next_definition<void* (*)(void*)>("__cxa_begin_catch");
    char here;
    unpoison_fiber_stack_at(&here, false);
    return next(exception);
}

} // extern "C"

boost::context::stack_context FiberStack::allocate() {
    boost::context::stack_context stack = inner_.allocate();
    unpoison(stack);
    remember(stack, true);
    return stack;
}

void FiberStack::deallocate(boost::context::stack_context& stack) noexcept {
    remember(stack, false);
    unpoison(stack);
    inner_.deallocate(stack);
}

#else // without ASan a fiber stack needs only to be remembered

boost::context::stack_context FiberStack::allocate() {
    boost::context::stack_context stack = inner_.allocate();
    remember(stack, true);
    return stack;
}

void FiberStack::deallocate(boost::context::stack_context& stack) noexcept {
    remember(stack, false);
    inner_.deallocate(stack);
}

#endif
