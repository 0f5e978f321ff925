#pragma once

// Test helpers shared by quiescence_test.cpp and io_pool_test.cpp: `ask` sends a request
// from a short-lived event-based actor and records the answer with its virtual time.

#include "cafmesh/testing/ask.hpp"
