"""File safety: bad inputs are reported, and nothing is ever lost or damaged."""
from __future__ import annotations

import os
import stat

import pytest

import fake_plugin
from fake_plugin import MIGRATED, SAMPLE, run_cli
from migrator import files, pipeline


@pytest.fixture(autouse=True)
def _fake():
    with fake_plugin.installed():
        yield


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_python2_file_is_reported_and_left_alone_while_others_migrate(tmp_path):
    py2 = write(tmp_path / "old.py", b'import tensorflow as tf\nprint "grads", tf.gradients(y, x)\n')
    ok = write(tmp_path / "ok.py", SAMPLE.encode())
    before = py2.read_bytes()
    r = run_cli("--jobs", "1", tmp_path)
    assert r.exit_code == 123
    assert py2.read_bytes() == before
    assert ok.read_text() == MIGRATED
    line = [ln for ln in r.stderr.splitlines() if ln.startswith(str(py2))]
    assert len(line) == 1 and line[0].startswith(f"{py2}:2:"), r.stderr
    assert "Traceback" not in r.output


def test_bom_is_kept(tmp_path):
    f = write(tmp_path / "bom.py", b"\xef\xbb\xbf" + SAMPLE.encode())
    assert run_cli("-j1", f).exit_code == 1
    assert f.read_bytes() == b"\xef\xbb\xbf" + MIGRATED.encode()


def test_crlf_is_kept(tmp_path):
    f = write(tmp_path / "crlf.py", SAMPLE.replace("\n", "\r\n").encode())
    assert run_cli("-j1", f).exit_code == 1
    assert f.read_bytes() == MIGRATED.replace("\n", "\r\n").encode()


def test_mixed_newlines_are_kept_line_by_line(tmp_path):
    data = b"import tensorflow as tf\r\nx = 1\ng = tf.gradients(y, x)\r\n"
    f = write(tmp_path / "mixed.py", data)
    run_cli("-j1", f)
    assert f.read_bytes() == data.replace(b"tf.gradients(", b"tape_gradients(")


def test_latin1_cookie_is_kept(tmp_path):
    src = "# -*- coding: latin-1 -*-\nname = 'café'\n" + SAMPLE
    f = write(tmp_path / "latin.py", src.encode("latin-1"))
    assert run_cli("-j1", f).exit_code == 1
    assert f.read_bytes() == ("# -*- coding: latin-1 -*-\nname = 'café'\n" + MIGRATED).encode("latin-1")


def test_missing_final_newline_is_kept(tmp_path):
    f = write(tmp_path / "nonl.py", SAMPLE.rstrip("\n").encode())
    run_cli("-j1", f)
    assert f.read_bytes() == MIGRATED.rstrip("\n").encode()


def test_binary_file_is_reported_and_untouched(tmp_path):
    data = b"\x89PNG\x00\x01 tf.gradients( \xff\xfe"  # bytes that pass the prefilter
    f = write(tmp_path / "blob.py", data)
    r = run_cli("-j1", f)
    assert r.exit_code == 123
    assert f.read_bytes() == data
    assert f"{f}:1:5: cannot decode" in r.stderr


def test_invalid_utf8_is_reported_with_its_position(tmp_path):
    f = write(tmp_path / "bad.py", b"x = 1\ny = '\xff' # tf.gradients(y, x)\n")
    r = run_cli("-j1", f)
    assert r.exit_code == 123
    assert f"{f}:2:6: cannot decode as utf-8" in r.stderr
    assert f.read_bytes() == b"x = 1\ny = '\xff' # tf.gradients(y, x)\n"


def test_binary_without_keywords_is_skipped_silently(tmp_path):
    f = write(tmp_path / "blob.py", b"\x00\x01\x02")
    r = run_cli("-j1", f)
    assert r.exit_code == 0
    assert f.read_bytes() == b"\x00\x01\x02"


def test_empty_file(tmp_path):
    f = write(tmp_path / "empty.py", b"")
    r = run_cli("-j1", f)
    assert r.exit_code == 0
    assert f.read_bytes() == b""


def test_symlink_loops_terminate_and_are_left_alone(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg / "m.py", SAMPLE.encode())
    os.symlink(pkg, pkg / "again")  # directory loop
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")  # file loop
    r = run_cli("-j1", "--report", tmp_path / "r.json", tmp_path)
    assert r.exit_code == 123  # the self-loop cannot be read
    assert f"{tmp_path / 'self.py'}:1:1: cannot read: symlink loop" in r.stderr
    assert (pkg / "m.py").read_text() == MIGRATED
    assert os.path.islink(pkg / "again") and os.path.islink(tmp_path / "self.py")
    import json

    paths = [f["path"] for f in json.loads((tmp_path / "r.json").read_text())["files"]]
    assert sorted(os.path.basename(p) for p in paths) == ["m.py", "self.py"]


def test_file_reached_twice_is_processed_once_and_symlink_kept(tmp_path):
    real = write(tmp_path / "real.py", SAMPLE.encode())
    link = tmp_path / "link.py"
    os.symlink(real, link)
    r = run_cli("-j1", "--report", tmp_path / "r.json", real, link, tmp_path)
    assert r.exit_code == 1
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["path"] for f in report["files"]] == [str(real)]
    assert os.path.islink(link) and real.read_text() == MIGRATED


def test_write_through_symlink_keeps_the_link(tmp_path):
    (tmp_path / "src").mkdir()
    real = write(tmp_path / "src" / "real.py", SAMPLE.encode())
    link = tmp_path / "link.py"
    os.symlink(real, link)
    run_cli("-j1", link)
    assert os.path.islink(link)
    assert real.read_text() == MIGRATED


def test_read_only_file_is_reported_not_crashed_on(tmp_path, monkeypatch):
    f = write(tmp_path / "ro.py", SAMPLE.encode())
    other = write(tmp_path / "rw.py", SAMPLE.encode())
    f.chmod(0o444)
    if os.geteuid() == 0:  # root may write a 0444 file; make the OS say no, as it would to a user
        real_access = os.access
        monkeypatch.setattr(
            os, "access", lambda p, m, **kw: False if os.path.realpath(p) == str(f) and m & os.W_OK else real_access(p, m, **kw)
        )
    try:
        r = run_cli("-j1", tmp_path)
        assert r.exit_code == 123
        assert f"{f}:1:1: file is read-only; not written" in r.stderr
        assert f.read_bytes() == SAMPLE.encode()
        assert stat.S_IMODE(f.stat().st_mode) == 0o444
        assert other.read_text() == MIGRATED
    finally:
        f.chmod(0o644)


def test_mode_and_exec_bit_are_kept(tmp_path):
    f = write(tmp_path / "tool.py", ("#!/usr/bin/env python\n" + SAMPLE).encode())
    f.chmod(0o751)
    run_cli("-j1", f)
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert f.read_text().endswith(MIGRATED)
    assert listing(tmp_path) == ["tool.py"]  # no temporary file left behind


def test_file_with_nothing_to_migrate_keeps_bytes_and_mtime(tmp_path):
    f = write(tmp_path / "plain.py", b"# mentions gradients in a comment only\nx = 1\n")
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    r = run_cli("-j1", f)
    assert r.exit_code == 0
    assert f.stat().st_mtime_ns == 1_000_000_000
    assert f.read_bytes() == b"# mentions gradients in a comment only\nx = 1\n"


def test_file_vanishing_mid_run_is_reported_and_not_recreated(tmp_path, monkeypatch):
    gone = write(tmp_path / "gone.py", SAMPLE.encode())
    kept = write(tmp_path / "kept.py", SAMPLE.encode())
    real = pipeline.migrate_text

    def vanish(text, path, *a, **kw):
        out = real(text, path, *a, **kw)
        if path.endswith("gone.py"):
            os.unlink(path)
        return out

    monkeypatch.setattr(pipeline, "migrate_text", vanish)
    r = run_cli("-j1", tmp_path)
    assert r.exit_code == 123
    assert f"{gone}:1:1: not written" in r.stderr
    assert not gone.exists()
    assert kept.read_text() == MIGRATED
    assert listing(tmp_path) == ["kept.py"]


def test_file_edited_mid_run_is_not_overwritten(tmp_path, monkeypatch):
    f = write(tmp_path / "busy.py", SAMPLE.encode())
    real = pipeline.migrate_text

    def edit(text, path, *a, **kw):
        out = real(text, path, *a, **kw)
        with open(path, "a") as fh:
            fh.write("# the user's new line\n")
        return out

    monkeypatch.setattr(pipeline, "migrate_text", edit)
    r = run_cli("-j1", f)
    assert r.exit_code == 123
    assert "changed on disk" in r.stderr
    assert f.read_text() == SAMPLE + "# the user's new line\n"


def test_file_deleted_before_reading_is_reported(tmp_path):
    f = write(tmp_path / "x.py", SAMPLE.encode())
    found = files.discover([str(tmp_path)])
    f.unlink()
    from migrator.runner import RunOptions, run

    res = run(found.files, RunOptions())
    assert res.results[0].error.startswith(f"{f}:1:1: cannot read")


def test_size_limit(tmp_path):
    f = write(tmp_path / "big.py", SAMPLE.encode() + b"#" * 5000 + b"\n")
    (tmp_path / "pyproject.toml").write_text("[tool.tfgradmigrate]\nmax-file-size = 1000\n")
    r = run_cli("-j1", f)
    assert r.exit_code == 123
    assert "file too large" in r.stderr
    assert f.read_bytes().startswith(SAMPLE.encode())


def test_excludes(tmp_path):
    for rel in ["a.py", ".venv/lib/x.py", "build/y.py", "node_modules/z.py", "gen/m_pb2.py", "sub/site-packages/q.py", "nb.ipynb", "notes.txt"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    found = files.discover([str(tmp_path)], excludes=["*_pb2.py"])
    assert [os.path.relpath(p, tmp_path) for p in found.files] == ["a.py", "nb.ipynb"]
    walk_all = files.discover([str(tmp_path)], default_excludes=False)
    assert len(walk_all.files) == 7
    assert files.discover([str(tmp_path / "build" / "y.py")]).files  # named explicitly: taken


def test_exclude_glob_on_relative_path(tmp_path):
    for rel in ["keep/a.py", "tests/data/b.py"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True)
        p.write_text("")
    # a pattern with a slash is relative to the folder it is given for (the current one for --exclude)
    found = files.discover([str(tmp_path)], excludes=[files.ExcludeSet(["tests/data"], str(tmp_path))])
    assert [os.path.relpath(p, tmp_path) for p in found.files] == [os.path.join("keep", "a.py")]
    found = files.discover([str(tmp_path)], excludes=[files.ExcludeSet(["tests/data"], str(tmp_path / "keep"))])
    assert len(found.files) == 2


def test_decode_roundtrip_of_source():
    src = files.Source("x.py", "a = 1\r\nb = 'é'\r\n".encode("utf-8"))
    assert src.text == "a = 1\nb = 'é'\n"
    assert src.encode(src.text) == src.raw


def test_unencodable_result_is_an_error_not_a_corruption():
    src = files.Source("x.py", b"# -*- coding: ascii -*-\nx = 1\n")
    assert src.text
    with pytest.raises(files.FileError):
        src.encode("# -*- coding: ascii -*-\nx = 'é'\n")


def test_a_link_out_of_the_walked_tree_is_not_followed(tmp_path):
    """Found by an adversarial run: a link into a venv's site-packages had its target rewritten."""
    outside = tmp_path / "venv" / "lib" / "site-packages"
    outside.mkdir(parents=True)
    target = write(outside / "third.py", SAMPLE.encode())
    proj = tmp_path / "proj"
    proj.mkdir()
    os.symlink(target, proj / "third.py")
    os.symlink(outside, proj / "vendored")
    write(proj / "own.py", SAMPLE.encode())
    run_cli("-j1", proj)
    assert target.read_text() == SAMPLE and (proj / "own.py").read_text() == MIGRATED
    run_cli("-j1", proj / "third.py")  # named explicitly: written through
    assert target.read_text() == MIGRATED


def test_an_unencodable_rewrite_reports_no_migrated_site_in_any_mode(tmp_path, monkeypatch):
    """The copy of another file's gradient once brought `→` into a latin-1 file: the file was left
    unchanged, but the report called its site migrated (an adversarial run)."""
    from migrator import pipeline, runner
    from migrator.model import MIGRATED, Site

    path = tmp_path / "m.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nimport tensorflow as tf\ny = tf.gradients(1, 2)\n")
    site = Site("tf_gradients", "TFG003", 3, 5, MIGRATED, "rewritten")
    monkeypatch.setattr(pipeline, "migrate_text", lambda text, *a, **k: (text + "# \u2192\n", [site]))
    for mode in (runner.CHECK, runner.WRITE):
        (res,) = runner.run([str(path)], runner.RunOptions(jobs=1, mode=mode)).results
        assert res.error and "cannot be encoded" in res.error and not res.sites and not res.changed
    assert path.read_bytes().endswith(b"tf.gradients(1, 2)\n")
