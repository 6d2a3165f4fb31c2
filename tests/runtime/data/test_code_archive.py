"""The code archive: deterministic packing by content, the packer's limits, and an unpacker that refuses hostile
archives (a bomb, `..`, absolute paths, links, devices) before or while it writes, never outside its folder."""

from __future__ import annotations

import io
import os
import stat
import struct
import sys
import zipfile
import zlib

import pytest

from sparrow_runtime.data.code_archive import CodeLimits, pack, pack_code, sources, unpack, walk
from sparrow_runtime.errors import CodeError


def make_package(root, name="mypkg", body="VALUE = 1\n"):
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(body)
    (pkg / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    return pkg


def hostile(entries, *, stored=False):
    """An archive of (name, data, mode) entries written as given: zipfile checks none of our rules."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buf.getvalue()


def listing(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, files in os.walk(folder) for f in files)


def test_same_files_give_the_same_archive_and_a_change_a_new_name(tmp_path):
    """The archive depends on the files' names, contents and executable bits only: times and __pycache__ do not
    change it, a changed byte does."""
    pkg = make_package(tmp_path)
    first = pack_code([pkg])
    os.utime(pkg / "helper.py", (1, 1))
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"junk")
    (pkg / "stale.pyc").write_bytes(b"junk")
    again = pack_code([pkg])
    assert again.data == first.data and again.digest == first.digest and again.files == 2
    (pkg / "helper.py").write_text("def twice(x):\n    return x + x\n")
    assert pack_code([pkg]).digest != first.digest


def test_unpack_gives_back_the_files_read_only_with_their_executable_bit(tmp_path):
    """py_modules land under py/ (a package as its folder, a module file as itself), the working directory under
    wd/; every file read-only, a script still executable."""
    pkg = make_package(tmp_path / "src")
    (tmp_path / "src" / "single.py").write_text("X = 3\n")
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "table.csv").write_text("a,b\n1,2\n")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    packed = pack_code([pkg, tmp_path / "src" / "single.py"], work)
    into = tmp_path / "out"
    into.mkdir()
    assert unpack(packed.data, str(into)) == packed.size
    assert listing(into) == [
        "py/mypkg/__init__.py",
        "py/mypkg/helper.py",
        "py/single.py",
        "wd/data/table.csv",
        "wd/run.sh",
    ]
    assert (into / "wd" / "data" / "table.csv").read_text() == "a,b\n1,2\n"
    assert stat.S_IMODE((into / "wd" / "run.sh").stat().st_mode) == 0o555
    assert stat.S_IMODE((into / "py" / "single.py").stat().st_mode) == 0o444


def test_a_module_object_is_shipped_as_its_file_or_package(tmp_path, monkeypatch):
    """An imported top-level module names its own file (a package: its folder); a submodule or a built-in is a
    clear CodeError."""
    make_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import mypkg
    import mypkg.helper

    assert sources([mypkg]) == [("py/mypkg", str(tmp_path / "mypkg"))]
    with pytest.raises(CodeError, match="top-level package"):
        sources([mypkg.helper])
    with pytest.raises(CodeError, match="no file of its own"):
        sources([sys])
    monkeypatch.delitem(sys.modules, "mypkg")
    monkeypatch.delitem(sys.modules, "mypkg.helper")


def test_the_packer_refuses_what_breaks_a_limit_before_reading(tmp_path):
    """Too many files, too many bytes, a name that cannot be imported, a name twice: CodeError at the client."""
    pkg = make_package(tmp_path)
    with pytest.raises(CodeError, match="over 1 files"):
        walk(sources([pkg]), CodeLimits(max_files=1))
    with pytest.raises(CodeError, match="over 10 bytes"):
        walk(sources([pkg]), CodeLimits(max_bytes=10))
    bad = tmp_path / "not-a-name"
    bad.mkdir()
    with pytest.raises(CodeError, match="cannot be imported"):
        sources([bad])
    other = tmp_path / "b"
    make_package(other)
    with pytest.raises(CodeError, match="twice"):
        sources([pkg, other / "mypkg"])
    with pytest.raises(CodeError, match="not a directory"):
        sources([], tmp_path / "missing")
    with pytest.raises(CodeError, match="is a list"):
        sources(str(pkg))  # one path, not in a list: never read as its characters


def test_the_packer_refuses_links_out_and_special_files_and_takes_a_link_inside_as_a_file(tmp_path):
    """A link to a file inside is packed as that file; a link out, a dangling link, a link to a folder and a FIFO
    are refused naming the path."""
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    pkg = make_package(tmp_path / "src")
    os.symlink(pkg / "helper.py", pkg / "alias.py")
    packed = pack_code([pkg])
    into = tmp_path / "out"
    into.mkdir()
    unpack(packed.data, str(into))
    assert (into / "py" / "mypkg" / "alias.py").read_text() == (pkg / "helper.py").read_text()
    assert not (into / "py" / "mypkg" / "alias.py").is_symlink()
    for make, match in [
        (lambda p: os.symlink(outside, p), "links out"),
        (lambda p: os.symlink(tmp_path / "nothing", p), "links out"),
        (lambda p: os.symlink(pkg / "gone", p), "dangling"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: os.symlink(tmp_path, p), "link to a directory|links out"),
    ]:
        path = pkg / "bad"
        make(path)
        with pytest.raises(CodeError, match=match):
            pack_code([pkg])
        path.unlink()
    os.symlink(pkg / "__pycache__", pkg / "inner")
    (pkg / "__pycache__").mkdir()
    with pytest.raises(CodeError, match="link to a directory"):
        pack_code([pkg])


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("py/../../escaped.py", "'..'"),
        ("../escaped.py", "'..'"),
        ("/tmp/escaped.py", "absolute"),
        ("py//x.py", "empty"),
        ("py/./x.py", "'.'"),
        ("py\\..\\x.py", "backslash"),
        ("elsewhere/x.py", "not under"),
        ("py", "not under"),
    ],
)
def test_the_unpacker_refuses_a_path_out_of_its_folder(tmp_path, name, match):
    """An entry whose path could land outside the folder (or outside py/ and wd/) is refused before anything is
    written."""
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match=match):
        unpack(hostile([("py/ok.py", b"x", 0o100644), (name, b"evil", 0o100644)]), str(into))
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        (0o120777, "symlink"),
        (0o020644, "character device"),
        (0o060644, "block device"),
        (0o010644, "fifo"),
        (0o040755, "folder"),
    ],
)
def test_the_unpacker_refuses_links_devices_and_folders(tmp_path, mode, what):
    """Only regular files are entries: a link (which could point out), a device, a FIFO or a folder entry is
    refused before anything is written."""
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match="not a regular file"):
        unpack(hostile([("py/ok.py", b"x", 0o100644), ("py/link", b"/etc/passwd", mode)]), str(into))
    assert listing(tmp_path) == []


def test_the_unpacker_refuses_a_bomb_by_its_declared_sizes(tmp_path):
    """100 MB of zeros deflate to about 100 KB: over the unpacker's byte limit by what the archive declares,
    refused before any byte is inflated; under a generous limit it unpacks."""
    bomb = hostile([("py/zeros.bin", bytes(100 * 2**20), 0o100644)])
    assert len(bomb) < 200_000
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match="declares over 10,485,760 bytes"):
        unpack(bomb, str(into), CodeLimits(max_bytes=10 * 2**20))
    assert listing(into) == []
    with pytest.raises(CodeError, match="has 2 files, over the limit of 1"):
        unpack(hostile([("py/a", b"1", 0o100644), ("py/b", b"2", 0o100644)]), str(into), CodeLimits(max_files=1))


def lie_about_size(data: bytes, name: bytes, size: int) -> bytes:
    """The archive with `name`'s uncompressed size stated as `size` in both its local and central headers."""
    out = bytearray(data)
    local = out.find(b"PK\x03\x04")
    central = out.find(b"PK\x01\x02")
    struct.pack_into("<I", out, local + 22, size)
    struct.pack_into("<I", out, central + 24, size)
    assert name in out
    return bytes(out)


def test_the_unpacker_stops_a_bomb_that_lies_about_its_size(tmp_path):
    """An entry that declares 1 KB and inflates to 50 MB stops at its declared size (never more is written) and
    is refused; one that claims a ratio no deflate stream reaches is refused before it is read."""
    honest = hostile([("py/zeros.bin", bytes(50 * 2**20), 0o100644)])
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match=r"corrupt|inflates past"):
        unpack(lie_about_size(honest, b"py/zeros.bin", 1024), str(into))
    written = into / "py" / "zeros.bin"
    assert not written.exists() or written.stat().st_size <= 1024
    claim = hostile([("py/small.bin", b"x" * 100, 0o100644)])
    with pytest.raises(CodeError, match="no deflate stream"):
        unpack(lie_about_size(claim, b"py/small.bin", 2**31), str(tmp_path / "out2"))


def test_the_unpacker_refuses_what_is_not_an_archive_or_is_corrupt(tmp_path):
    """Bytes that are no zip, a name twice, an encrypted or bzip2 entry, a flipped byte: CodeError, never
    another exception."""
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match="not a valid archive"):
        unpack(b"this is not a zip", str(into))
    with pytest.warns(UserWarning, match="Duplicate name"):
        twice = hostile([("py/a.py", b"1", 0o100644), ("py/a.py", b"2", 0o100644)])
    with pytest.raises(CodeError, match="twice"):
        unpack(twice, str(into))
    data = bytearray(hostile([("py/a.py", b"print('hello')\n" * 50, 0o100644)]))
    start = data.find(b"PK\x03\x04") + 30 + len(b"py/a.py")
    data[start + 3] ^= 0xFF
    with pytest.raises(CodeError, match="corrupt"):
        unpack(bytes(data), str(tmp_path / "out3"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("py/a.py", b"x")
    with pytest.raises(CodeError, match="only stored or deflated"):
        unpack(buf.getvalue(), str(tmp_path / "out4"))


def test_a_packed_archive_is_checked_against_the_unpackers_limits_too(tmp_path):
    """The node monitor's limits hold whatever the client's were: a client with a bigger limit is refused."""
    pkg = make_package(tmp_path, body="x = 1\n" * 1000)
    packed = pack(walk(sources([pkg]), CodeLimits(max_bytes=10**6)), CodeLimits(max_bytes=10**6))
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(CodeError, match="declares over 100 bytes"):
        unpack(packed.data, str(into), CodeLimits(max_bytes=100))
    assert zlib.crc32(packed.data) == zlib.crc32(pack_code([pkg]).data)
