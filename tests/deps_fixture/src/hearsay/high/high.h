// Violation: library code includes the test-only module (its tests may).
#pragma once

#include "hearsay/testkit/fake.h"
