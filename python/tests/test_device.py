"""flashkv.Device: I/O, counters, the profiler against `flashkv profile`,
bad input, the GIL and Ctrl-C."""

import os
import signal
import threading

import pytest

import flashkv
from conftest import cli_error, cli_json


def test_presets_are_the_cli_devices(cli):
    names = [d["name"] for d in cli_json(cli, "devices", "--json")]
    assert flashkv.presets() == names


def test_write_read_trim_and_exact_counters():
    d = flashkv.Device("nvme")
    assert (d.name, d.sector_size, d.erase_unit) == ("nvme", 512, None)
    assert d.capacity == 2 << 30
    c = d.write(8192, b"\x07" * 4096)
    assert 0 <= c["start_ns"] < c["end_ns"] and c["energy_nj"] > 0
    assert d.read(8192, 4096) == b"\x07" * 4096
    assert d.clock_ns >= c["end_ns"]
    d.trim(8192, 4096)
    assert d.read(8192, 512) == bytes(512)
    d.flush()
    s = d.stats()
    assert (s["host_writes"], s["host_write_bytes"], s["host_reads"], s["host_read_bytes"]) == (1, 4096, 2, 4608)
    assert (s["trims"], s["flushes"]) == (1, 1)


def test_raw_nand_needs_an_erase_before_a_rewrite():
    d = flashkv.Device("nand-ipl")
    unit = d.erase_unit
    assert unit == 128 << 10
    d.write(0, b"a" * 4096)
    with pytest.raises(flashkv.DeviceError, match="already programmed"):
        d.write(0, b"b" * 4096)
    d.erase(0)
    d.write(0, b"b" * 4096)
    assert d.read(0, 4096) == b"b" * 4096
    assert d.stats()["block_erases"] == 1


def test_capacity_spec_file_and_hybrid(tmp_path):
    assert flashkv.Device("nvme", capacity="16g").capacity == 16 << 30
    spec = tmp_path / "disk.toml"
    spec.write_text(
        'description = "my 15K disk"\nsource = "datasheet"\ncapacity = "36 GiB"\n'
        "power = { active_mw = 14000, idle_mw = 10000 }\n"
        '[model]\nkind = "hdd"\nrpm = 15000\nseek_avg_ms = 3.5\nmedia_mb_per_s = 125\n'
    )
    d = flashkv.Device(spec=spec)
    assert d.capacity == 36 << 30
    h = flashkv.Device(hybrid=("ssd-lowend", "hdd-7200"))
    assert h.name == "hybrid(ssd-lowend,hdd-7200)"
    h.write(4096, b"z" * 4096)
    assert h.read(4096, 4096) == b"z" * 4096
    s = h.stats()
    assert s["hybrid"]["ssd_write_requests"] == 1 and s["hdd"]["host_writes"] == 0


def test_profile_rows_are_the_cli_rows(cli):
    d = flashkv.Device("hdd-15k")
    rows = d.profile(["rr", "sw", "mix"], [4096, "64k"], ops=500, iodepth=2, seed=3)
    want = cli_json(
        cli, "profile", "--device", "hdd-15k", "--patterns", "rr,sw,mix",
        "--block-sizes", "4k,64k", "--ops", "500", "--iodepth", "2", "--seed", "3", "--json",
    )
    assert rows == want
    # The device itself is untouched: every run is on a fresh copy.
    assert d.stats()["host_reads"] == 0
    spec_rows = flashkv.Device("nand-ipl").profile("rw", ["4k"], ops=50)
    assert spec_rows[0]["erases"] > 0


def test_a_hybrid_profiles_on_fresh_hybrids():
    h = flashkv.Device(hybrid=("nvme", "hdd-7200"))
    a = h.profile(["rw"], ["4k"], ops=300)
    b = h.profile(["rw"], ["4k"], ops=300)
    assert a == b and a[0]["device"] == "hybrid(nvme,hdd-7200)" and a[0]["iops"] > 0


def test_unknown_preset_has_the_cli_message(cli):
    with pytest.raises(flashkv.UnknownPreset) as e:
        flashkv.Device("nope")
    assert isinstance(e.value, ValueError) and isinstance(e.value, flashkv.Error)
    assert str(e.value) == cli_error(cli, "profile", "--device", "nope")


def test_bad_spec_has_the_cli_message(cli, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('description = "x"\nsource = "y"\ncapacity = "1g"\n[model]\nkind = "warp"\n')
    with pytest.raises(flashkv.SpecError) as e:
        flashkv.Device(spec=spec)
    assert str(e.value) == cli_error(cli, "profile", "--spec", str(spec))
    with pytest.raises(flashkv.InvalidInput):
        flashkv.Device(spec=tmp_path / "missing.toml")


def test_misaligned_and_out_of_range_io():
    d = flashkv.Device("dram-ssd")
    with pytest.raises(flashkv.MisalignedIO, match="not a multiple of the 512-byte sector"):
        d.write(100, b"x" * 512)
    with pytest.raises(flashkv.MisalignedIO):
        d.read(0, 100)
    with pytest.raises(flashkv.OutOfRange, match="exceeds capacity"):
        d.read(d.capacity, 512)
    assert d.stats()["host_writes"] == 0


def test_bad_profile_arguments_have_the_cli_messages(cli):
    d = flashkv.Device("nvme")
    with pytest.raises(flashkv.InvalidInput) as e:
        d.profile(["zz"], [4096])
    assert str(e.value) in cli_error(cli, "profile", "--device", "nvme", "--patterns", "zz")
    with pytest.raises(flashkv.InvalidInput) as e:
        d.profile(["rr"], [1000])
    assert str(e.value) == cli_error(cli, "profile", "--device", "nvme", "--block-sizes", "1000")
    with pytest.raises(flashkv.InvalidInput, match="must be greater than zero"):
        d.profile(["rr"], [0])
    with pytest.raises(flashkv.InvalidInput, match="at least 1"):
        d.profile(["rr"], [4096], ops=0)
    with pytest.raises(flashkv.InvalidInput):
        flashkv.Device()
    with pytest.raises(flashkv.InvalidInput):
        flashkv.Device("nvme", hybrid=("nvme", "hdd-7200"))


def test_the_gil_is_released_while_profiling():
    d = flashkv.Device("nvme")
    t = threading.Thread(target=d.profile, args=(["rr"], [4096]), kwargs={"ops": 3_000_000})
    t.start()
    spins = 0
    while t.is_alive():
        spins += 1
    t.join()
    # With the GIL held the loop could not run until the profile ended.
    assert spins > 1000


def test_ctrl_c_stops_a_long_profile():
    d = flashkv.Device("nvme")
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        d.profile(["rr"], [4096], ops=10**11)
    timer.join()
