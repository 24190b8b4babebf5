"""Writes the sample traces in this folder: one synthetic OLTP-like run of
1,000 requests in each format `flashkv replay` reads. Fixed seed, so the
files (and a replay's figures) never change. Standard library only:

    python3 traces/make.py        # rewrites traces/sample.*
"""

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUESTS = 1000
SPAN = 1 << 30  # 1 GiB
STEP_US = 1000  # one request per millisecond


def requests():
    """(time µs, device, offset, size, write): 4-64 KiB, 40 % writes, a
    fifth of them continuing the previous request (a sequential run)."""
    rng = random.Random(3)
    offset = 0
    for i in range(REQUESTS):
        size = 4096 << rng.randrange(5)
        if rng.random() < 0.2:
            offset = min(offset + size, SPAN - (64 << 10))
        else:
            offset = rng.randrange((SPAN - (64 << 10)) // 4096) * 4096
        yield i * STEP_US, rng.randrange(2), offset, size, rng.random() < 0.4


def write(name, header, lines):
    text = "".join(f"# {h}\n" for h in header) + "".join(f"{l}\n" for l in lines)
    (HERE / name).write_text(text)


def main():
    rs = list(requests())
    common = [f"A synthetic OLTP-like trace: {REQUESTS} requests of 4-64 KiB over 1 GiB, 40 % writes,",
              "one per millisecond, made by traces/make.py (fixed seed). Lines starting with # are skipped."]
    write("sample.msr.csv", common + ["MSR Cambridge CSV: Timestamp (100 ns ticks),Hostname,DiskNumber,Type,Offset,Size,ResponseTime"],
          (f"{128166372000000000 + t * 10},oltp,{d},{'Write' if w else 'Read'},{o},{s},0" for t, d, o, s, w in rs))
    write("sample.spc", common + ["SPC/UMass: ASU,LBA (512 B),Size (bytes),Opcode,Timestamp (s)"],
          (f"{d},{o // 512},{s},{'w' if w else 'r'},{t / 1e6:.6f}" for t, d, o, s, w in rs))
    write("sample.disksim", common + ["DiskSim ASCII: time (ms) devno blkno (512 B) size (sectors) flags (1 = read)"],
          (f"{t / 1e3:.3f} {d} {o // 512} {s // 512} {0 if w else 1}" for t, d, o, s, w in rs))
    blk = []
    for i, (t, _, o, s, w) in enumerate(rs):
        rwbs = "W" if w else "R"
        for k, (action, dt) in enumerate([("Q", 0), ("D", 20), ("C", 400)]):
            blk.append(f"8,0 0 {3 * i + k + 1} {(t + dt) / 1e6:.9f} 4242 {action} {rwbs} {o // 512} + {s // 512} [pg]")
    write("sample.blkparse", common + ["blkparse default text output (Q queued, D issued, C completed); replay reads the Q events"], blk)


if __name__ == "__main__":
    main()
