// What every file of the OpenCL plugin shares: the exception that carries a
// kiln error code up to the ABI boundary, and checks on OpenCL status codes.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstdint>
#include <string>

#include "kiln/plugin.h"
#include "kiln/plugin_kit.hpp"

// Internal to the plugin: keep these out of its dynamic symbol table.
#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// Thrown anywhere in the plugin; plugin.cpp turns it into a kiln_error.
using plugin_kit::fail;
using plugin_kit::Failure;

// "CL_OUT_OF_RESOURCES (-5)" for a status code.
std::string cl_status_name(cl_int status);

// Throws KILN_ERR_DEVICE (or KILN_ERR_OUT_OF_MEMORY for allocation failures)
// naming `what` and the status, unless status is CL_SUCCESS.
void cl_check(cl_int status, const std::string& what);

}  // namespace kiln::ocl

#pragma GCC visibility pop
