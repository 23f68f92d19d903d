// The typed errors live in support/Error.h; this forwards for the IR's users.
#pragma once
#include "support/Error.h"
