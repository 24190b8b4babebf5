"""flashkv.replay and flashkv.advise against `flashkv replay/advise --json`."""

import pytest

import flashkv
from conftest import cli_error, cli_json


def msr_trace(path, n=400):
    lines = []
    for i in range(n):
        op = "Write" if i % 3 == 0 else "Read"
        off = (i * 7919 % 4096) * 4096
        lines.append(f"{128166372003061629 + i * 10000},hm,{i % 2},{op},{off},{4096 * (1 + i % 4)},100")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_is_the_cli_report(cli, tmp_path):
    trace = msr_trace(tmp_path / "t.csv")
    got = flashkv.replay(trace, "msr", "nvme", device_map="stride=1g")
    want = cli_json(cli, "replay", "--trace", str(trace), "--format", "msr", "--device", "nvme",
                    "--device-map", "stride=1g", "--json")
    assert got == want
    assert got["records"] == 400 and len(got["per_device"]) == 2


def test_replay_on_a_hybrid_device_changes_it(cli, tmp_path):
    trace = msr_trace(tmp_path / "t.csv", 100)
    h = flashkv.Device(hybrid=("ssd-lowend", "hdd-7200"))
    got = flashkv.replay(trace, "msr", h, back_to_back=True)
    want = cli_json(cli, "replay", "--trace", str(trace), "--format", "msr",
                    "--hybrid", "ssd-lowend,hdd-7200", "--back-to-back", "--json")
    assert got == want
    assert h.stats()["hybrid"] == got["hybrid"]


def test_a_malformed_trace_names_its_line(cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,h,0,Read,0,512,1\n2,h,0,Read,zero,512,1\n")
    with pytest.raises(flashkv.TraceError) as e:
        flashkv.replay(bad, "msr", "nvme")
    assert str(e.value) == cli_error(cli, "replay", "--trace", str(bad), "--format", "msr", "--device", "nvme")
    assert "line 2" in str(e.value)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(flashkv.TraceError, match="no records"):
        flashkv.replay(empty, "msr", "nvme")
    with pytest.raises(flashkv.InvalidInput, match="unknown trace format"):
        flashkv.replay(bad, "csv", "nvme")
    with pytest.raises(flashkv.InvalidInput, match="device_map"):
        flashkv.replay(bad, "msr", "nvme", device_map="stride=1000")


def test_advise_is_the_cli_advice(cli):
    got = flashkv.advise("hdd-7200", ops=100)
    assert got == cli_json(cli, "advise", "--device", "hdd-7200", "--ops", "100", "--json")
    assert got["device_class"] == "hdd" and got["breakeven_fraction"] < 0.05
    assert flashkv.advise(flashkv.Device("hdd-7200"), ops=100) == got


def test_advise_from_profile_rows():
    rows = flashkv.Device("ssd-320").profile(["sr", "rr", "sw", "rw"], [4096, 65536, 1 << 20], ops=300, iodepth=32)
    a = flashkv.advise(profile=rows)
    assert a["device_class"] == "ssd" and [p["pattern"] for p in a["patterns"]] == ["sr", "rr", "sw", "rw"]
    with pytest.raises(flashkv.InvalidInput, match="no random read"):
        flashkv.advise(profile=[r for r in rows if r["pattern"] != "rr"])
    with pytest.raises(flashkv.InvalidInput, match="not both"):
        flashkv.advise("nvme", profile=rows)
    with pytest.raises(flashkv.InvalidInput, match="not a hybrid"):
        flashkv.advise(flashkv.Device(hybrid=("nvme", "hdd-7200")))
    with pytest.raises(flashkv.InvalidInput, match="positive price"):
        flashkv.advise("nvme", device_usd=0)
