// Violation: a lower module includes a higher one.
#pragma once

#include "hearsay/high/high.h"
