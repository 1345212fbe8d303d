// Pitfall 2: a std::mutex held across a fiber-aware wait.
//
//   GET /locked?ms=100   takes a lock, waits 100 ms holding it (the stand-in for a call to
//                        another service inside a critical section), counts one update, answers
//                        {"updates":3,"mutex":"..."}
//
// With a std::mutex this hangs a carrier for good. Fiber A takes the mutex and parks in its
// wait; fiber B, on the same carrier, calls lock(), and std::mutex blocks the carrier thread
// itself. A's wait is over soon, but A can only run on that carrier, which is stuck in B's
// lock(): A never releases the mutex. Not a slow pin: a deadlock. boost::fibers::mutex parks B
// instead, the carrier runs A, A unlocks, B goes on. (Java's `synchronized` → `ReentrantLock`
// advice is the same move.) On platform threads both are fine: B's thread blocks, A's runs.
#pragma once

#include <httplib.h>

enum class LockKind { fiber_mutex, std_mutex_bad };

void add_locked_route(httplib::Server& server, LockKind lock);
