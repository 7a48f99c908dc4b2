// The identity of a plugin binary, for compile-cache keys: a rebuilt plugin
// must not run the executables its previous build compiled, even when its
// compiler_version() string stayed the same (as ccache keys on the compiler
// binary, not on its version string).
//
// "build-id:<hex>" when the ELF file carries a GNU build-id note (the linker
// hashes the output into it, so it changes with any change to the code),
// else "sha256:<hex>" of the file's bytes. Both depend on the bytes only, so
// the same plugin build gives the same identity on every machine.
#pragma once

#include <string>

namespace kiln {

// Throws kiln::Error naming the file when it cannot be read.
std::string plugin_binary_identity(const std::string& path);

// The GNU build-id of an ELF image as lower-case hex, or "" when it has none
// (or is not a well-formed 64-bit little-endian ELF file).
std::string elf_build_id(const unsigned char* image, size_t size);

}  // namespace kiln
