// The wirings: where a request whose head has arrived is handled. The connector (lesson 03)
// asks its Executor; these are the two executors of the study, with the same in-flight
// accounting (request_metrics.hpp) around the request in both.
//
//   vt        the handler runs right on the connection's fiber ("virtual threads"): every
//             request the connector accepted is inside the app at once; nothing else bounds it.
//   platform  the handler runs on one of PlatformExecutor's OS threads; the connection's fiber
//             parks until it is done. At most threads_max requests are inside the app; the rest
//             wait in the executor's queue, their connections open, counted nowhere else.
#pragma once

#include "lessons/03-connector/connector.hpp"
#include "lessons/05-wirings/platform_executor.hpp"
#include "lessons/05-wirings/request_metrics.hpp"

enum class Wiring { platform, vt };

Connector::Executor on_connection_fiber(RequestMetrics& metrics);
Connector::Executor on_platform_threads(PlatformExecutor& threads, RequestMetrics& metrics);
