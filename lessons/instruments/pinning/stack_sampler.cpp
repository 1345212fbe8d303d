#include "lessons/instruments/pinning/stack_sampler.hpp"

#include "lessons/instruments/pinning/carrier_monitor.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <execinfo.h>
#include <mutex>
#include <stdexcept>
#include <string>
#include <ucontext.h>
#include <utility>

namespace {

// The monitor of the calling carrier thread. initial-exec: the handler reads it, and the
// general TLS access model may allocate on first use, which a handler must never do.
[[gnu::tls_model("initial-exec")]] thread_local CarrierMonitor* this_thread_monitor = nullptr;

// The handler's own stack. backtrace() needs a few KiB; AddressSanitizer's instrumentation needs
// more. Untouched pages cost no memory.
constexpr std::size_t signal_stack_size = 256 * 1024;
// A plain pointer, freed by detach_sampler(): the algorithm that calls it is destroyed with
// Boost's scheduler, itself a thread_local, which may outlive a thread_local unique_ptr here
// (thread_locals die in the reverse order of their first use; --trace's scheduler hook may use
// Boost's first).
thread_local char* signal_stack = nullptr;
thread_local stack_t previous_signal_stack{};

void* interrupted_instruction(void* context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
    return reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return reinterpret_cast<void*>(uc->uc_mcontext.pc);
#else
    (void)uc;
    return nullptr; // the sampler then drops the first two frames instead
#endif
}

void on_sample_signal(int, siginfo_t*, void* context) {
    const int saved_errno = errno;
    if (CarrierMonitor* monitor = this_thread_monitor)
        monitor->take_sample(interrupted_instruction(context));
    errno = saved_errno;
}

} // namespace

int sample_signal() {
    return SIGRTMIN + 3;
}

void install_sample_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        void* warm_up[1];
        ::backtrace(warm_up, 1); // loads libgcc's unwinder now, outside any signal handler
        struct sigaction action {};
        action.sa_sigaction = on_sample_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        if (::sigaction(sample_signal(), &action, nullptr) != 0)
            throw std::runtime_error(std::string("cannot install the stack sample handler: ") +
                                     std::strerror(errno));
    });
}

void attach_sampler(CarrierMonitor* monitor) {
    signal_stack = new char[signal_stack_size]; // not zero-filled: untouched pages stay free
    stack_t stack{};
    stack.ss_sp = signal_stack;
    stack.ss_size = signal_stack_size;
    if (::sigaltstack(&stack, &previous_signal_stack) != 0) {
        delete[] std::exchange(
            signal_stack, nullptr); // the handler then runs on the fiber's stack: still correct
        previous_signal_stack = stack_t{};
        previous_signal_stack.ss_flags = SS_DISABLE;
    }
    this_thread_monitor = monitor;
}

void detach_sampler() {
    this_thread_monitor = nullptr;
    if (signal_stack != nullptr) {
        ::sigaltstack(&previous_signal_stack, nullptr);
        delete[] std::exchange(signal_stack, nullptr);
    }
}
