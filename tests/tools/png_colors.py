#!/usr/bin/env python3
"""Counts the pixels of a PNG (8-bit RGB or RGBA, as rsvg-convert writes)
close to each colour given as #rrggbb, one "colour count" line each: a test's
proof that a renderer drew a series, without an imaging library."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                sys.exit(f"{path}: only 8-bit RGB/RGBA is read (depth {depth}, type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    prev, rows, i = bytearray(stride), [], 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    for line in rows:
        for x in range(0, stride, bpp):
            yield line[x], line[x + 1], line[x + 2]


def main():
    path, colours = sys.argv[1], sys.argv[2:]
    want = [(c, int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)) for c in colours]
    counts = {c: 0 for c in colours}
    for r, g, b in pixels(path):
        for c, wr, wg, wb in want:
            if abs(r - wr) + abs(g - wg) + abs(b - wb) <= 24:
                counts[c] += 1
    for c in colours:
        print(c, counts[c])


main()
