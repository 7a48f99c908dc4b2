// The cases `kiln check-backend --large` adds to the suite (op_cases_large.cpp).
#pragma once

#include "graph/conformance/suite.h"

namespace kiln::conformance {

// Op cases above 2^20 elements, named "<op> large ...".
void add_large_cases(Suite& suite);

}  // namespace kiln::conformance
