// `kiln cache verify`'s second check: an entry whose checksum holds may
// still be bytes its plugin cannot load (a plugin build that writes what it
// cannot read, bytes damaged before they were summed), and every run that
// hit it used to end. The verifier loads each such entry through the plugin
// that made it, on a device with the entry's fingerprint.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "compiler_cache/entry_format.h"
#include "core/backend.h"

namespace kiln::cli {

class LoadChecker {
 public:
  enum class Result { Loaded, NotLoadable, NotChecked };
  // Loads `entry`'s executable; NotLoadable sets `why`. NotChecked: the
  // plugin that made it is not on the plugin path (or is another build of
  // it), or no device here has the entry's fingerprint; `why` says which.
  Result check(const compiler_cache::Entry& entry, std::string* why);

 private:
  // The open device of `backend` with `fingerprint`, or nullptr (why set).
  Device* device_for(const std::string& backend, const std::string& plugin_binary, const std::string& fingerprint,
                     std::string* why);
  std::map<std::string, std::unique_ptr<Device>> devices_;  // by backend + fingerprint
  std::map<std::string, std::string> unavailable_;          // the same key: why none
};

}  // namespace kiln::cli
