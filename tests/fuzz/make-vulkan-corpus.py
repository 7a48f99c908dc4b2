#!/usr/bin/env python3
"""Seeds for fuzz_vulkan_executable: compiles the IR seeds (corpus/ir/*.ir)
with the Vulkan plugin through its C ABI (device 0, lavapipe in CI) and
writes the executable bytes to corpus/vulkan_executable/.
Usage: tests/fuzz/make-vulkan-corpus.py [build-dir]"""
import ctypes
import glob
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "build")
lib = ctypes.CDLL(os.path.join(build, "bin", "libkiln-backend-vulkan.so"))
lib.kiln_plugin_get_api.restype = ctypes.c_void_p
table = ctypes.cast(lib.kiln_plugin_get_api(), ctypes.POINTER(ctypes.c_void_p))
# kiln_plugin_api: size_t, u32, u32, const char*, then the function pointers
# in declaration order; compile is the 14th, executable_bytes_free the 15th.
FIRST_FN = 3


class CompileArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("ir", ctypes.c_void_p), ("ir_size", ctypes.c_size_t),
                ("options", ctypes.c_char_p), ("device_index", ctypes.c_int32),
                ("executable", ctypes.POINTER(ctypes.c_uint8)), ("executable_size", ctypes.c_size_t)]


compile_fn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(CompileArgs))(table[FIRST_FN + 13])
free_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(table[FIRST_FN + 14])
out_dir = os.path.join(here, "corpus", "vulkan_executable")
os.makedirs(out_dir, exist_ok=True)
for path in sorted(glob.glob(os.path.join(here, "corpus", "ir", "*.ir"))):
    data = open(path, "rb").read()
    buf = ctypes.create_string_buffer(data, len(data))
    args = CompileArgs(ctypes.sizeof(CompileArgs), ctypes.cast(buf, ctypes.c_void_p), len(data), None, 0, None, 0)
    if compile_fn(ctypes.byref(args)):
        continue  # rejected IR (the plugin's error object is leaked: a one-off tool)
    exe = ctypes.string_at(args.executable, args.executable_size)
    free_fn(ctypes.cast(args.executable, ctypes.c_void_p))
    name = os.path.basename(path)[:-len(".ir")]
    with open(os.path.join(out_dir, name + ".vkexe"), "wb") as f:
        f.write(exe)
    print(name, len(exe))
