// Names for fibers, so that a pinning event can say "ticker" instead of an address.
//
//   name_this_fiber("ticker");   // in the fiber, any time; the name goes away with the fiber
//
// The detector looks names up from its own thread, so they live in a process-wide table keyed
// by the fiber's context, behind a mutex; a fiber-specific cleanup removes the entry when the
// fiber ends. Naming is rare (once per fiber), so a std::mutex here costs nothing that matters.
#pragma once

#include <string>

void name_this_fiber(std::string name);

// The name `fiber` (a boost::fibers::context) gave itself, or "" when it has none (or has ended).
std::string fiber_name(const void* fiber);

// The name, or "unnamed fiber 0x..." (Boost identifies fibers by their context's address).
std::string fiber_display_name(const void* fiber);
