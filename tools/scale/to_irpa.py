"""Rewrites a make_scale.py subject's weights as an IREE parameter archive.

Reads OUT_DIR/weights.safetensors (memory-mapped, never the whole file into
memory), writes OUT_DIR/weights.irpa with the same keys and bytes through
IREE's own writer (iree.runtime.save_archive_file), and points
OUT_DIR/stages.yaml at it. An .irpa entry is bytes only: bf16 entries are
written as their uint16 bit patterns.

Usage (the Python with IREE's runtime, EERIE_PYTHON):

    python to_irpa.py OUT_DIR
"""

import json
import struct
import sys
from pathlib import Path

import iree.runtime as ireert
import numpy as np

DTYPES = {"BF16": np.uint16, "F32": np.float32}


def main(out):
    path = out / "weights.safetensors"
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    arrays = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        arrays[key] = data[begin:end].view(DTYPES[entry["dtype"]]).reshape(entry["shape"])
    ireert.save_archive_file(arrays, str(out / "weights.irpa"))
    spec = out / "stages.yaml"
    spec.write_text(spec.read_text().replace("[weights.safetensors]", "[weights.irpa]"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
