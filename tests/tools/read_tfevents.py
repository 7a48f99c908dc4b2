#!/usr/bin/env python3
"""Independent reader for TensorBoard event files (standard library only).

Decodes every TFRecord (uint64 length, masked CRC-32C of the length bytes,
payload, masked CRC-32C of the payload), verifies both CRCs, parses each
payload as an Event protobuf and prints one line per scalar:
    <step> <tag> <simple_value>
Exits non-zero on any framing, CRC or protobuf error.
"""
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        if i > len(buf):
            raise ValueError("truncated protobuf field %d" % field)
        yield field, wire, value


def main(path):
    data = open(path, "rb").read()
    i = records = 0
    version = None
    while i < len(data):
        header = data[i:i + 8]
        if len(header) < 8 or len(data) < i + 12:
            raise ValueError("truncated record header at byte %d" % i)
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[i + 8:i + 12])
        if length_crc != masked(header):
            raise ValueError("length CRC mismatch at byte %d" % i)
        payload = data[i + 12:i + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[i + 12 + length:i + 16 + length])
        if len(payload) != length or payload_crc != masked(payload):
            raise ValueError("payload CRC mismatch at byte %d" % i)
        i += 16 + length
        records += 1
        step = 0
        wall_time = None
        for field, wire, value in fields(payload):
            if field == 1 and wire == 1:
                (wall_time,) = struct.unpack("<d", value)
            elif field == 2 and wire == 0:
                step = value
            elif field == 3 and wire == 2:
                version = value.decode()
            elif field == 5 and wire == 2:
                for vf, vw, v in fields(value):
                    if vf != 1 or vw != 2:
                        continue
                    tag = simple = None
                    for f, w, x in fields(v):
                        if f == 1 and w == 2:
                            tag = x.decode()
                        elif f == 2 and w == 5:
                            (simple,) = struct.unpack("<f", x)
                    if tag is not None and simple is not None:
                        print(step, tag.replace(" ", "_"), repr(simple))
        if wall_time is None or wall_time < 1e9:
            raise ValueError("record %d has no plausible wall_time" % records)
    if version != "brain.Event:2":
        raise ValueError("no file_version brain.Event:2 record")
    print("records", records, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
