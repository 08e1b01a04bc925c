// A test-only module's header.
#pragma once
