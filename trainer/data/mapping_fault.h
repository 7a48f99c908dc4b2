// Reading a file mapping whose file shrank under it (truncated, or rewritten
// in place, while `kiln train` reads it) raises SIGBUS, which used to end
// the process with no message. read_mapping() runs a read with a SIGBUS
// handler armed for this thread and reports the fault instead, so the
// caller can name the file in one line.
#pragma once

#include <csetjmp>

namespace kiln::data {

namespace detail {
struct FaultGuard {
  sigjmp_buf env;
  const void* volatile address = nullptr;  // written by the handler
};
void arm(FaultGuard* guard);  // installs the process's SIGBUS handler once
void disarm();
}  // namespace detail

// Runs read(), which may only copy from file mappings into plain memory (no
// objects with destructors, no locks: a fault jumps out of it). Returns the
// faulting address when a mapped page was gone (SIGBUS), else nullptr.
template <class F>
const void* read_mapping(F&& read) {
  detail::FaultGuard guard;
  detail::arm(&guard);
  if (sigsetjmp(guard.env, 1) == 0) {
    read();
    detail::disarm();
    return nullptr;
  }
  detail::disarm();
  return guard.address;
}

}  // namespace kiln::data
