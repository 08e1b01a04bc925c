// Allowed: a test uses the test-only module and lower modules.
#include "hearsay/high/high.h"
#include "hearsay/low/low.h"
#include "hearsay/testkit/fake.h"
