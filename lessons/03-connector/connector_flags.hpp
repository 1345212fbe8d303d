// The command-line flags every connector-based server shares.
#pragma once

#include "lessons/03-connector/connector.hpp"
#include "lessons/common/flags.hpp"

void add_connector_flags(Flags& flags, ConnectorOptions& options);
