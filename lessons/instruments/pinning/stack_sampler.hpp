// Stack samples of a carrier thread, taken while the carrier is still pinned.
//
// One thread cannot read another thread's stack safely while it runs. So the watchdog sends the
// carrier thread a signal, and the signal handler, running on that thread right where it was
// interrupted (inside nanosleep, poll, a mutex wait...), records the return addresses on its
// stack with backtrace() into the CarrierMonitor's preallocated buffer.
//
// A signal handler may only do async-signal-safe work: no malloc, no locks, no stdio. glibc does
// not list backtrace() as safe: its first call loads libgcc's unwinder (so
// install_sample_handler() makes that call), and a sample that lands while the carrier is itself
// unwinding a C++ exception re-enters the unwinder's frame cache. A known risk of in-process
// samplers, accepted for a diagnostic that is switched on by a flag. Turning addresses into names
// happens later, on the watchdog thread (frame_names.hpp). The handler runs on an alternate signal
// stack of its own, so a fiber whose small stack is nearly full does not overflow it.
//
// Side effect: the signal interrupts the blocking call. The handler is installed with
// SA_RESTART, and libc, libstdc++, libpq and cpp-httplib retry the calls that still return
// EINTR (nanosleep, poll), so programs here do not notice; code that treats EINTR as an error
// would. At most one signal per long turn.
#pragma once

class CarrierMonitor;

// The signal used for samples: a real-time signal nothing else in this repository uses.
int sample_signal();

// Installs the handler, process-wide. Idempotent.
void install_sample_handler();

// On a carrier thread: samples of this thread go to `monitor`; gives the thread its alternate
// signal stack. detach_sampler() undoes both (call it on the same thread before it ends).
void attach_sampler(CarrierMonitor* monitor);
void detach_sampler();
