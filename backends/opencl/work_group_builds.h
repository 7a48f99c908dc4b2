// PoCL compiles a kernel's work-group function (the loop over work items,
// specialised for the local size and grid) at its first enqueue, even for a
// program created from a binary: 0.1-4.6 s per kernel, in the first step.
// The program binary packs PoCL's program directory, work-group builds
// included, so compile enqueues every kernel once, as the schedule launches
// it, before reading the binary: a program loaded from it then runs at once,
// with PoCL's own kernel cache off (POCL_KERNEL_CACHE=0). Other drivers keep
// what they keep; the launches cost them one run of the kernels.
//
// A program created from that binary still loads each work-group function
// at the kernel's first enqueue (0.1-0.3 ms each, 5-8 ms of the hidden-64
// test model's first step, issue 32), so on PoCL load runs every launch
// once too: one run of the unit's kernels on scratch at setup instead.
#pragma once

#include "common.h"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// Runs each distinct (kernel, grid, local size) launch of `schedule` once on
// zeroed scratch buffers of the schedule's sizes, and waits for them.
// GEMM and copy steps are not run.
void build_work_groups(cl_context ctx, cl_device_id device, cl_program program, const Schedule& schedule);

}  // namespace kiln::ocl

#pragma GCC visibility pop
