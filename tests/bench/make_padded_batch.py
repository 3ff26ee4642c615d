#!/usr/bin/env python3
"""Writes a verl-style padded batch for the streaming import measurement (no numpy needed).

    make_padded_batch.py OUT [B S L K E]     (default 128 4096 48 8 64)

OUT/batch.npz (stored entries, as np.savez writes them) and OUT/folder/batch/ (the same arrays as
routed_experts.npy + attention_mask.npy, as np.save per tensor writes them): routed_experts int16
[B, S, L, K], attention_mask int64 [B, S]; batch row b is left-padded by (16 b) mod 512 positions
(zero rows there), and every row's top-k ids are distinct. Then, e.g.:

    /usr/bin/time -v routepack import --db lib.routepack --name b --experts 64 --top-k 8 \\
        --layers 48 --quiet OUT/batch.npz
"""
import array
import os
import struct
import sys
import zipfile


def npy_header(descr, shape):
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    while (10 + len(h) + 1) % 64:
        h += " "
    h += "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()


def main():
    out = sys.argv[1]
    B, S, L, K, E = (list(map(int, sys.argv[2:7])) + [128, 4096, 48, 8, 64][len(sys.argv[2:7]):])[:5]
    if E < K:
        sys.exit("need E >= K (K distinct ids per token)")
    stride = E // K
    row = array.array("h", [(t * 7 + l * 3) % stride + k * stride for t in range(S) for l in range(L)
                            for k in range(K)]).tobytes()
    width = L * K * 2
    folder = os.path.join(out, "folder", "batch")
    os.makedirs(folder, exist_ok=True)
    mask = array.array("q")
    with open(os.path.join(folder, "routed_experts.npy"), "wb") as f:
        f.write(npy_header("<i2", (B, S, L, K)))
        for b in range(B):
            pad = min((b * 16) % 512, S - 1)
            f.write(bytes(pad * width) + row[pad * width:])
            mask.extend([0] * pad + [1] * (S - pad))
    with open(os.path.join(folder, "attention_mask.npy"), "wb") as f:
        f.write(npy_header("<i8", (B, S)) + mask.tobytes())
    with zipfile.ZipFile(os.path.join(out, "batch.npz"), "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name in ("routed_experts.npy", "attention_mask.npy"):
            z.write(os.path.join(folder, name), name)


if __name__ == "__main__":
    main()
