"""flashkv.Db: round trips with a reopen, ranges, batches, bad input."""

import pytest

import flashkv


def test_file_round_trip_with_reopen(tmp_path):
    path = tmp_path / "my.db"
    with flashkv.Db.open(path, store="ipl") as db:
        for i in range(300):
            db.put(f"user:{i:03}", f"value {i}")
        assert db.delete("user:007") is True
        assert db.delete("user:007") is False
        db.flush()
    with flashkv.Db.open(path, create=False) as db:
        assert db.get("user:042") == b"value 42"
        assert db.get(b"user:007") is None
        keys = [k for k, _ in db.range()]
        assert len(keys) == 299 and keys == sorted(keys)
        assert db.stats()["store_kind"] == "ipl"
    with flashkv.Db.open(path, read_only=True) as db:
        assert db.get("user:299") == b"value 299"
        with pytest.raises(flashkv.StoreError, match="read-only"):
            db.put("x", "y")


def test_device_round_trip_with_reopen():
    dev = flashkv.Device("nand-ipl")
    db = flashkv.Db.open(dev, store="ipl", buffer_pages=8)
    for i in range(1000):
        db.put(i.to_bytes(4, "big"), bytes([i % 251]) * 100)
    # The device is the store's while it is open.
    with pytest.raises(flashkv.StoreError, match="in use by an open Db"):
        dev.write(0, bytes(512))
    with pytest.raises(flashkv.StoreError, match="already has an open Db"):
        flashkv.Db.open(dev)
    db.close()
    assert db.closed
    with pytest.raises(flashkv.StoreError, match="closed"):
        db.get(b"x")
    writes = dev.stats()["host_writes"]
    assert writes > 0
    db = flashkv.Db.open(dev, store="ipl", create=False)
    assert db.get((999).to_bytes(4, "big")) == bytes([999 % 251]) * 100
    assert sum(1 for _ in db.range()) == 1000
    db.close()


def test_ranges_bounds_reverse_prefix_across_chunks():
    db = flashkv.Db.open(flashkv.Device("dram-ssd"))
    for i in range(200):
        db.put(f"a{i:03}", str(i))
    db.put("b", "x")
    assert [k for k, _ in db.range("a050", "a060")] == [f"a{i:03}".encode() for i in range(50, 60)]
    rev = [k for k, _ in db.range(prefix="a", reverse=True)]
    assert rev == [f"a{i:03}".encode() for i in reversed(range(200))]
    assert list(db.range(start="a199")) == [(b"a199", b"199"), (b"b", b"x")]
    assert list(db.range(prefix=b"\xff")) == []
    with pytest.raises(flashkv.InvalidInput, match="not both"):
        db.range("a", prefix="a")
    it = db.range()
    assert next(iter(it)) == (b"a000", b"0")
    db.close()


def test_batches_commit_atomically_or_not_at_all():
    db = flashkv.Db.open(flashkv.Device("nvme"))
    db.put("keep", "1")
    with db.batch() as b:
        b.put("a", "1")
        b.put("b", "2")
        b.delete("keep")
        assert len(b) == 3
    assert (db.get("a"), db.get("b"), db.get("keep")) == (b"1", b"2", None)
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put("c", "3")
            raise RuntimeError("abandon")
    assert db.get("c") is None
    b = db.batch()
    b.put(bytearray(b"d"), "4")
    b.commit()
    assert db.get("d") == b"4"
    with pytest.raises(flashkv.StoreError, match="already committed"):
        b.put("e", "5")
    s = db.stats()
    assert s["commits"] == 3 and s["policy"] == "clock"  # put, batch, batch: the abandoned one never committed
    db.checkpoint()
    assert db.stats()["checkpoints"] == s["checkpoints"] + 1
    db.close()


def test_bad_input(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a store\n" * 100)
    before = text.read_bytes()
    with pytest.raises(flashkv.NotAStore, match="not a flashkv store"):
        flashkv.Db.open(text)
    assert text.read_bytes() == before
    with pytest.raises(flashkv.NotAStore, match="no such store"):
        flashkv.Db.open(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(flashkv.InvalidInput, match="unknown store 'zip'"):
        flashkv.Db.open(tmp_path / "x.db", store="zip")
    with pytest.raises(flashkv.InvalidInput, match="unknown policy"):
        flashkv.Db.open(tmp_path / "x.db", policy="mru")
    db = flashkv.Db.open(tmp_path / "x.db")
    with pytest.raises(flashkv.StoreLocked, match="open elsewhere in this process"):
        flashkv.Db.open(tmp_path / "x.db")
    with pytest.raises(TypeError, match="key must be bytes"):
        db.put(1, "x")
    with pytest.raises(flashkv.InvalidInput, match="too large"):
        db.put(b"k" * 100_000, b"v")
    db.close()
    db.close()
