#!/usr/bin/env python3
"""Splits a GGUF file into N parts in llama-gguf-split's layout (test data for ridge pull).

usage: gguf_split.py IN.gguf N OUT_PREFIX  ->  OUT_PREFIX-00001-of-0000N.gguf ...
Part k holds split.no = k (u16), split.count = N (u16), split.tensors.count (i32) and a share of
the tensors in order; part 0 also holds every metadata key of IN. Alignment 32 (general.alignment
is not honoured: the files ridge writes use the default).
"""
import struct
import sys

src, n_parts, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
buf = open(src, "rb").read()
pos = 0


def take(fmt):
    global pos
    v = struct.unpack_from("<" + fmt, buf, pos)
    pos += struct.calcsize("<" + fmt)
    return v[0]


def skip_string():
    global pos
    n = take("Q")
    pos += n


SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(t):
    global pos
    if t in SIZES:
        pos += SIZES[t]
    elif t == 8:
        skip_string()
    elif t == 9:
        et, n = take("I"), take("Q")
        for _ in range(n):
            skip_value(et)
    else:
        raise SystemExit(f"unknown GGUF value type {t}")


assert buf[:4] == b"GGUF"
pos = 4
version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
kv_start = pos
for _ in range(n_kv):
    skip_string()
    skip_value(take("I"))
kv_raw = buf[kv_start:pos]
infos = []
for _ in range(n_tensors):
    start = pos
    skip_string()
    name = buf[start + 8:pos]
    n_dims = take("I")
    dims = [take("Q") for _ in range(n_dims)]
    ttype, offset = take("I"), take("Q")
    infos.append((name, dims, ttype, offset))
align = 32
data_start = (pos + align - 1) // align * align
ends = [o for _, _, _, o in infos[1:]] + [len(buf) - data_start]


def string(s):
    return struct.pack("<Q", len(s)) + s


def split_kv(k):
    return (string(b"split.no") + struct.pack("<IH", 2, k) + string(b"split.count") + struct.pack("<IH", 2, n_parts)
            + string(b"split.tensors.count") + struct.pack("<Ii", 5, n_tensors))


per = (n_tensors + n_parts - 1) // n_parts
for k in range(n_parts):
    share = list(range(k * per, min(n_tensors, (k + 1) * per)))
    head = b"GGUF" + struct.pack("<IQQ", version, len(share), (n_kv if k == 0 else 0) + 3)
    head += (kv_raw if k == 0 else b"") + split_kv(k)
    data, tinfo = b"", b""
    for i in share:
        name, dims, ttype, offset = infos[i]
        blob = buf[data_start + offset:data_start + ends[i]]
        data += b"\0" * ((-len(data)) % align)
        tinfo += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        tinfo += struct.pack("<IQ", ttype, len(data))
        data += blob
    out = head + tinfo
    out += b"\0" * ((-len(out)) % align)
    open(f"{prefix}-{k + 1:05d}-of-{n_parts:05d}.gguf", "wb").write(out + data)
