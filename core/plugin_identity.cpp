#include "core/plugin_identity.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/hash.h"
#include "core/regular_file.h"

namespace kiln {
namespace {

constexpr size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }

// Reads a T at `offset` if it lies inside the image.
template <class T>
bool read_at(const unsigned char* image, size_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, image + offset, sizeof(T));
  return true;
}

// Walks one note segment [offset, offset+bytes) for NT_GNU_BUILD_ID.
std::string build_id_in_notes(const unsigned char* image, size_t size, uint64_t offset, uint64_t bytes) {
  if (offset > size || bytes > size - offset) return {};
  const uint64_t end = offset + bytes;
  while (end - offset >= sizeof(Elf64_Nhdr)) {
    Elf64_Nhdr note{};
    std::memcpy(&note, image + offset, sizeof(note));
    const uint64_t name_at = offset + sizeof(note);
    const uint64_t desc_at = name_at + align4(note.n_namesz);
    if (note.n_namesz > end - name_at || desc_at > end || note.n_descsz > end - desc_at) return {};
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(image + name_at, "GNU", 4) == 0 &&
        note.n_descsz > 0) {
      static const char digits[] = "0123456789abcdef";
      std::string hex;
      for (uint32_t i = 0; i < note.n_descsz; ++i) {
        const unsigned char b = image[desc_at + i];
        hex += digits[b >> 4];
        hex += digits[b & 15];
      }
      return hex;
    }
    offset = desc_at + align4(note.n_descsz);
  }
  return {};
}

}  // namespace

std::string elf_build_id(const unsigned char* image, size_t size) {
  Elf64_Ehdr header{};
  if (!read_at(image, size, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_phentsize != sizeof(Elf64_Phdr))
    return {};
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (!read_at(image, size, header.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), &segment)) return {};
    if (segment.p_type != PT_NOTE) continue;
    if (std::string id = build_id_in_notes(image, size, segment.p_offset, segment.p_filesz); !id.empty()) return id;
  }
  return {};
}

std::string plugin_binary_identity(const std::string& path) {
  RegularFile file = open_regular_file(path, std::numeric_limits<uint64_t>::max());
  if (file.fd < 0) throw Error("cannot identify plugin " + path + " for the compile cache: " + file.problem);
  std::vector<unsigned char> image(file.size);
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = ::pread(file.fd, image.data() + done, image.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(file.fd);
  if (done != image.size())
    throw Error("cannot identify plugin " + path + " for the compile cache: it could not be read whole");
  if (std::string id = elf_build_id(image.data(), image.size()); !id.empty()) return "build-id:" + id;
  return "sha256:" + sha256_hex(image.data(), image.size());
}

}  // namespace kiln
