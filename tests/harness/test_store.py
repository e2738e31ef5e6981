"""Store: the same behaviour on a local folder, memory:// and a real S3 API (moto server)."""
from __future__ import annotations

import json
import os

import pytest

from ek_agents.errors import ArtifactNotFound, IntegrityError, InvalidInput, MissingDependency
from ek_agents.store import Store, canonical_json, episode_key, open_store, sha256_hex, task_key


def test_bytes_json_jsonl_roundtrip(store_url):
    s = Store(store_url)
    d = s.write_bytes("a/b.bin", b"\x00\x01hello")
    assert d == sha256_hex(b"\x00\x01hello") == s.digest("a/b.bin")
    assert s.read_bytes("a/b.bin") == b"\x00\x01hello"
    s.write_json("x/obj.json", {"z": 1, "a": [1.5, None, "é"]})
    assert s.read_json("x/obj.json") == {"z": 1, "a": [1.5, None, "é"]}
    assert s.read_bytes("x/obj.json") == b'{"a":[1.5,null,"\\u00e9"],"z":1}'  # canonical bytes
    rows = [{"i": i} for i in range(3)]
    assert s.write_jsonl("x/rows.jsonl", rows) == s.digest("x/rows.jsonl")
    assert s.read_jsonl("x/rows.jsonl") == rows
    assert s.exists("x/obj.json") and not s.exists("x/nope.json")
    assert s.list("x") == ["x/obj.json", "x/rows.jsonl"]
    assert s.list() == ["a/b.bin", "x/obj.json", "x/rows.jsonl"]
    assert s.list("missing/folder") == []
    # overwrite replaces
    s.write_json("x/obj.json", [1])
    assert s.read_json("x/obj.json") == [1]
    assert s.delete("x/obj.json") is True and s.delete("x/obj.json") is False
    assert s.list("x") == ["x/rows.jsonl"]
    with pytest.raises(ArtifactNotFound, match="x/obj.json"):
        s.read_json("x/obj.json")


def test_artifacts_are_content_addressed_and_verified(store_url):
    s = Store(store_url)
    d1 = s.put_artifact({"b": 2, "a": 1})
    assert d1 == s.put_artifact({"a": 1, "b": 2}) == sha256_hex(b'{"a":1,"b":2}')
    assert s.list("artifacts") == [f"artifacts/{d1}.json"]
    assert s.get_artifact(d1) == {"a": 1, "b": 2}
    s.write_bytes(f"artifacts/{d1}.json", b'{"a":1,"b":3}')  # tamper
    with pytest.raises(IntegrityError, match=d1):
        s.get_artifact(d1)
    with pytest.raises(InvalidInput):
        s.get_artifact("../../etc/passwd")
    with pytest.raises(ArtifactNotFound):
        s.get_artifact("0" * 64)


def test_manifest_and_baselines(store_url):
    s = Store(store_url)
    s.write_manifest("run-1", {"run_id": "run-1", "artifacts": {}})
    assert s.read_manifest("run-1")["run_id"] == "run-1"
    with pytest.raises(ArtifactNotFound, match="run-2"):
        s.read_manifest("run-2")
    assert s.load_baseline("main") is None
    s.save_baseline("main", {"report": {"n_trials": 3}})
    assert s.load_baseline("main") == {"report": {"n_trials": 3}}
    assert s.list() == ["baselines/main.json", "runs/run-1/manifest.json"]


@pytest.mark.parametrize("bad", ["", "/", "..", ".", "a/b", "/etc/passwd", "../x", "a\\b",
                                 "~root", " x", "a b", "x" * 300, None, 3])
def test_names_are_validated(bad, tmp_path):
    s = Store(tmp_path)
    with pytest.raises(InvalidInput):
        s.validate_name(bad)
    with pytest.raises(InvalidInput):
        s.save_baseline(bad, {})
    with pytest.raises(InvalidInput):
        s.write_manifest(bad, {})
    assert not any(p.name != "." for p in tmp_path.parent.glob("etc"))


@pytest.mark.parametrize("bad", ["", "/abs", "a//b", "a/../b", "./a", "a/.tmp-x"])
def test_keys_cannot_escape_the_root(bad, tmp_path):
    with pytest.raises(InvalidInput):
        Store(tmp_path / "s").write_bytes(bad, b"x")


def test_good_names_and_task_keys():
    for ok in ["main", "run_2026-11-29T21.50Z", "a@b+c=d,e", "_x"]:
        assert Store.validate_name(ok) == ok
    assert task_key("t1") == "t1"
    weird = ["a/b", "..", "", "x y", "é", "a" * 500]
    keys = [task_key(t) for t in weird]
    assert len(set(keys)) == len(weird)
    assert all("/" not in k and k not in (".", "..") and k for k in keys)
    assert episode_key("r", "a/b", 0).startswith("runs/r/episodes/~")


def test_json_refuses_nan_and_objects(tmp_path):
    s = Store(tmp_path)
    with pytest.raises(InvalidInput, match="NaN"):
        s.write_json("x.json", {"v": float("nan")})
    with pytest.raises(InvalidInput):
        s.write_json("x.json", {"v": object()})
    assert not s.exists("x.json")


def test_corrupt_json_is_an_integrity_error(tmp_path):
    s = Store(tmp_path)
    s.write_bytes("x.json", b"{not json")
    with pytest.raises(IntegrityError, match="x.json"):
        s.read_json("x.json")


def test_local_write_is_atomic_and_leaves_no_temp(tmp_path, monkeypatch):
    s = Store(tmp_path)
    s.write_json("k.json", {"v": 1})
    real_replace = os.replace

    def crash(*a, **k):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        s.write_json("k.json", {"v": 2})
    monkeypatch.setattr(os, "replace", real_replace)
    assert s.read_json("k.json") == {"v": 1}  # old content intact
    assert os.listdir(tmp_path) == ["k.json"]  # no temp file left behind


def test_default_url_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("EK_STORE", str(tmp_path / "envstore"))
    assert Store().url == str(tmp_path / "envstore")
    monkeypatch.delenv("EK_STORE")
    monkeypatch.chdir(tmp_path)
    default = Store()
    assert default.url == "./.ek" and default.list() == [] and default.load_baseline("b") is None
    assert not (tmp_path / ".ek").exists()  # reading creates nothing
    default.write_json("a.json", 1)
    assert (tmp_path / ".ek" / "a.json").is_file()
    s = Store(f"file://{tmp_path}/f")
    s.write_json("a.json", 1)
    assert (tmp_path / "f" / "a.json").read_bytes() == b"1"
    assert open_store(s) is s and open_store(str(tmp_path)).url == str(tmp_path)


def test_s3_without_s3fs_names_the_extra(monkeypatch):
    import importlib.util as iu

    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "s3fs" else real(name, *a))
    with pytest.raises(MissingDependency, match=r"pip install 'ek-agents\[s3\]'"):
        Store("s3://bucket/prefix")


def test_s3_needs_a_bucket(moto_s3):
    with pytest.raises(InvalidInput, match="bucket"):
        Store("s3://")


def test_s3_endpoint_comes_from_env_not_the_store(moto_s3):
    s = Store(moto_s3 + "/envcheck")
    s.write_json("a.json", {"x": 1})
    assert s.read_json("a.json") == {"x": 1}
    dump = json.dumps(s.list())
    assert "127.0.0.1" not in dump and "testing" not in dump


def test_canonical_json_matches_shape_to_json():
    from ek_agents.base import Cost, Episode

    ep = Episode("t", output="é", cost=Cost(input_tokens=3))
    assert canonical_json(ep) == ep.to_json().encode()
