"""Exporter shards: every switch of the 32k example read by exactly one shard, the shards balanced,
the split the same in every process, and Prometheus's configuration for them checked by promtool."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import example_plan, run_in_process

from gpufabric.telemetry.shards import ShardError, parse_shard, shard_of, split

EXAMPLE = Path(__file__).resolve().parents[2] / "inventory" / "examples" / "three-tier-32k.yml"
# A hash spreads names as a fair die would: a shard's size is binomial around the mean, so the bound is
# the mean plus four standard deviations (sqrt(mean)): 415 of 1,366 at N = 4, 122 at N = 16.
SIGMAS = 4


@pytest.fixture(scope="module")
def names() -> list[str]:
    return [d.name for d in example_plan(EXAMPLE).devices()]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 8, 13, 16])
@pytest.mark.slow
def test_every_switch_of_the_32k_fabric_is_in_exactly_one_shard(names, count):
    shards = split(names, count)
    flat = [n for s in shards for n in s]
    assert len(flat) == len(set(flat)) == len(names) == 1366
    assert set(flat) == set(names)
    for i, members in enumerate(shards):
        assert all(parse_shard(f"{i}/{count}").owns(n) for n in members)
    mean = len(names) / count
    assert max(len(s) for s in shards) <= mean + SIGMAS * mean**0.5, [len(s) for s in shards]


def test_the_hash_is_prometheus_hashmod():
    """relabel.go: the MD5 sum's bytes shifted into a uint64 (only the last 8 fit), modulo N."""
    digest = hashlib.md5(b"cmp-su1-leaf1").digest()
    value = 0
    for i, b in enumerate(digest):
        shift = (16 - i - 1) * 8
        if shift < 64:  # Go: a shift of 64 or more of a uint64 is 0
            value |= b << shift
    assert shard_of("cmp-su1-leaf1", 7) == value % 7


def test_the_split_is_the_same_whatever_pythonhashseed(names):
    code = (
        "import sys; from gpufabric.telemetry.shards import split; "
        "names = sys.stdin.read().split(); print([len(s) for s in split(names, 5)], split(names, 5)[3][:5])"
    )
    seen = set()
    for seed in ("0", "1", "12345"):
        done = subprocess.run([sys.executable, "-c", code], input="\n".join(names), capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True)  # fmt: skip
        seen.add(done.stdout)
    assert len(seen) == 1
    assert seen.pop().startswith(str([len(s) for s in split(names, 5)]))


@pytest.mark.parametrize("text", ["3/3", "1", "a/3", "-1/3", "0/0", "1/2000", "1/3/4"])
def test_a_shard_written_wrongly_is_refused(text):
    with pytest.raises(ShardError):
        parse_shard(text)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shards", "0"], "the number of shards is 1 to 1024, not 0"),
        (["--shards", "3", "--listen-base", "nohost"], "write HOST:PORT"),
        (["--shards", "3", "--listen-base", "127.0.0.1:65534"], "ports end at 65535"),
        (["--shards", "3", "--interval", "30 seconds"], "a Prometheus duration"),
    ],
)
def test_the_prometheus_command_refuses_bad_input(tmp_path, args, says):
    done = run_in_process("gpufabric", "telemetry", "prometheus", str(EXAMPLE), *args, "-o", str(tmp_path / "p"))
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


def test_serve_refuses_a_shard_that_does_not_exist():
    done = run_in_process("gpufabric", "telemetry", "serve", str(EXAMPLE), "--shard", "3/3")
    assert done.returncode == 2 and "shard 3 of 3 does not exist" in done.stderr and "Traceback" not in done.stderr


def test_the_prometheus_configuration_covers_every_switch_once_and_passes_promtool(tmp_path, names):
    out = tmp_path / "prom"
    run_in_process("gpufabric", "telemetry", "prometheus", str(EXAMPLE), "--shards", "4",
                   "--listen-base", "10.0.0.5:9200", "-o", str(out), check=True)  # fmt: skip
    manifest = json.loads((out / "shards.json").read_text())
    owned = [n for m in manifest["members"] for n in m["switches"]]
    assert sorted(owned) == sorted(names)
    for m in manifest["members"]:
        sd = json.loads((out / "targets" / f"shard-{m['shard']}.json").read_text())
        assert sd == [{"targets": [f"10.0.0.5:{9200 + m['shard']}"],
                       "labels": {"fabric": manifest["fabric"], "shard": str(m["shard"]), "shards": "4"}}]  # fmt: skip
        assert all(shard_of(n, 4) == m["shard"] for n in m["switches"] + m["servers"])
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: scripts/test.sh installs it")
        pytest.skip("promtool is not installed")
    check = subprocess.run(
        [promtool, "check", "config", str(out / "prometheus.yml")], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    (out / "gpufabric.rules.yml").write_text("groups: [{name: x, rules: [{alert: A, expr: 'up =='}]}]\n")
    broken = subprocess.run(
        [promtool, "check", "config", str(out / "prometheus.yml")], capture_output=True, text=True, check=False
    )
    assert broken.returncode != 0  # promtool reads the rules the configuration names
