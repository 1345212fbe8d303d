// The command-line flags every connector-based server shares.
#pragma once

#include "connector.hpp"
#include "flags.hpp"

void add_connector_flags(Flags& flags, ConnectorOptions& options);
