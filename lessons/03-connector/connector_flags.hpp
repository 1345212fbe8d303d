// The command-line flags every connector-based server shares (lessons 03-06).
#pragma once

#include "connector.hpp"
#include "flags.hpp"

void add_connector_flags(Flags& flags, ConnectorOptions& options);
