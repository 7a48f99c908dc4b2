// The compile-cache key: what makes two compilations interchangeable.
// It covers the canonical IR (which holds every shape), the backend, the
// plugin's compiler version, the plugin binary's identity (its build-id or
// content hash), the device fingerprint and the codegen options, and nothing
// else (no paths, no debug flags), so the same graph
// built in any process on any machine with the same device model gets the
// same key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::compiler_cache {

struct KeyParts {
  std::string backend;
  std::string compiler_version;
  std::string device_fingerprint;
  std::string options = "{}";  // canonical JSON of the codegen options
  std::string ir_hash;         // sha256 of the canonical IR
  // "build-id:<hex>" or "sha256:<hex>" of the plugin file
  // (core/plugin_identity.h): a rebuilt plugin gets new keys even when it
  // keeps its compiler_version.
  std::string plugin_binary;
};

std::string compute_key(const KeyParts& parts);

// The key parts as stored in an entry's metadata, and back (missing fields
// read as empty).
nlohmann::json key_parts_json(const KeyParts& parts);
KeyParts key_parts_from_json(const nlohmann::json& j);

// A name usable as one path component: [A-Za-z0-9._-], others become '_'.
std::string path_component(const std::string& s);

}  // namespace kiln::compiler_cache
