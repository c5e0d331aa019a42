#!/usr/bin/env python3
"""The kernel's BTF (what /sys/kernel/btf/vmlinux gives on a running
kernel) from a kernel image that is not an ELF file: an arm64 Image, as
Debian's linux-image-*-arm64 packages install it (boot/vmlinuz-*), which
bpftool cannot read.  The image holds the .BTF section's bytes as they
are; they are found by their header, whose lengths say where they end.

    scripts/kernels/image-btf.py IMAGE OUT.btf
    bpftool btf dump file OUT.btf format c > vmlinux.h

Exit status 1 when the image holds no BTF or more than one candidate.
"""
import struct
import sys

MAGIC = b"\x9f\xeb\x01\x00"  # BTF_MAGIC 0xeB9F, version 1, flags 0
HEADER = struct.Struct("<5I")  # hdr_len, type_off, type_len, str_off, str_len


def find(image):
    found = []
    at = image.find(MAGIC)
    while at >= 0:
        if at + 4 + HEADER.size <= len(image):
            hdr_len, type_off, type_len, str_off, str_len = HEADER.unpack_from(image, at + 4)
            end = at + hdr_len + str_off + str_len
            # The kernel's own: types first, strings right after, both large.
            if (hdr_len == 24 and type_off == 0 and str_off == type_len and type_len > 1 << 20
                    and str_len > 1 << 16 and end <= len(image) and image[end - 1] == 0):
                found.append((at, end))
        at = image.find(MAGIC, at + 1)
    return found


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        image = f.read()
    found = find(image)
    if len(found) != 1:
        print(f"image-btf: {len(found)} BTF blobs in {sys.argv[1]}, expected exactly 1", file=sys.stderr)
        sys.exit(1)
    start, end = found[0]
    with open(sys.argv[2], "wb") as f:
        f.write(image[start:end])
    print(f"image-btf: {end - start} bytes of BTF at offset {start}", file=sys.stderr)


main()
