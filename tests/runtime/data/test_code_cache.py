"""A node monitor's code cache: one private folder per user, entries named by the archive's digest and checked
against it, one fetch for tasks that come together, bounded by count and bytes with entries in use kept."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile

import pytest
import trio

from sparrow_runtime.data.code_archive import CodeLimits, pack_code
from sparrow_runtime.data.code_cache import CodeCache, user_dir
from sparrow_runtime.errors import CodeError, ValueLost


def archive(tmp_path, name="mylib", body="VALUE = 1\n"):
    folder = tmp_path / f"src-{name}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(body)
    return pack_code([folder / f"{name}.py"])


def fetcher(data, calls):
    async def fetch():
        calls.append(1)
        await trio.sleep(0.01)
        return data

    return fetch


@pytest.fixture
def cache():
    made = CodeCache.make(shared_with_task_users=False, max_entries=2, max_bytes=CodeLimits().max_bytes)
    yield made
    made.close()
    assert not os.path.exists(made.root)


def test_each_user_gets_a_private_folder_and_the_same_code_twice(tmp_path, cache):
    """The same archive for two users is unpacked twice, each in its user's 0700 folder; a user name that
    cannot be a file name gets a hashed folder; the root is 0700."""
    packed = archive(tmp_path)
    calls: list = []

    async def main():
        alice = await cache.acquire("alice", packed.digest, fetcher(packed.data, calls))
        odd = await cache.acquire("../bob", packed.digest, fetcher(packed.data, calls))
        return alice, odd

    alice, odd = trio.run(main)
    assert alice == os.path.join(cache.root, "user-alice", packed.name)
    assert os.path.dirname(odd) == os.path.join(cache.root, user_dir("../bob"))
    assert user_dir("../bob").startswith("hash-") and os.path.dirname(os.path.dirname(odd)) == cache.root
    assert len(calls) == 2
    for folder in (cache.root, os.path.dirname(alice), os.path.dirname(odd)):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    with open(os.path.join(alice, "py", "mylib.py")) as f:
        assert f.read() == "VALUE = 1\n"


def test_tasks_that_come_together_share_one_fetch(tmp_path, cache):
    """Ten acquires of one archive at once fetch it once; each holds the entry."""
    packed = archive(tmp_path)
    calls: list = []
    paths: list = []

    async def main():
        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(lambda: _acquire(cache, packed, calls, paths))

    trio.run(main)
    assert len(calls) == 1 and len(set(paths)) == 1
    assert cache.stats["fetched"] == 1 and cache.stats["hits"] == 9


async def _acquire(cache, packed, calls, paths):
    paths.append(await cache.acquire("alice", packed.digest, fetcher(packed.data, calls)))


def test_bytes_that_are_not_the_named_archive_are_refused_and_nothing_stays(tmp_path, cache):
    """A holder that sends other bytes than the digest names (or a hostile archive under its own digest) fails
    the acquire with CodeError; the user's folder holds nothing of it, and the next acquire fetches again."""
    packed = archive(tmp_path)
    other = archive(tmp_path, body="VALUE = 2\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as bad:
        bad.writestr("py/../../escape.py", "x")
    hostile = buf.getvalue()
    calls: list = []

    async def main():
        with pytest.raises(CodeError, match="not the archive"):
            await cache.acquire("alice", packed.digest, fetcher(other.data, calls))
        with pytest.raises(CodeError, match=r"'\.\.' part"):
            await cache.acquire("alice", hashlib.sha256(hostile).digest(), fetcher(hostile, calls))
        return await cache.acquire("alice", packed.digest, fetcher(packed.data, calls))

    path = trio.run(main)
    assert sorted(os.listdir(os.path.dirname(path))) == [packed.name]
    assert not os.path.exists(os.path.join(cache.root, "escape.py"))
    assert cache.stats["refused"] == 2 and len(calls) == 3


def test_a_lost_fetch_fails_the_acquire_and_the_next_one_tries_again(tmp_path, cache):
    """ValueLost from the fetch reaches the caller; nothing is kept."""
    packed = archive(tmp_path)

    async def lost():
        raise ValueLost("the value ... is lost: cannot reach its node monitor")

    async def main():
        with pytest.raises(ValueLost):
            await cache.acquire("alice", packed.digest, lost)
        return await cache.acquire("alice", packed.digest, fetcher(packed.data, []))

    assert os.path.isdir(trio.run(main))
    assert len(cache) == 1


def test_the_least_recently_used_entry_not_in_use_goes_first(tmp_path, cache):
    """With room for 2 entries: a third evicts the least recently used one that no task holds; an entry in
    use stays even past the bound, and goes once released and another comes."""
    a, b, c, d = (archive(tmp_path, body=f"VALUE = {i}\n") for i in range(4))

    async def main():
        pa = await cache.acquire("alice", a.digest, fetcher(a.data, []))
        pb = await cache.acquire("alice", b.digest, fetcher(b.data, []))
        cache.release("alice", b.digest)  # a is held, b is not
        pc = await cache.acquire("alice", c.digest, fetcher(c.data, []))
        assert os.path.isdir(pa) and not os.path.exists(pb) and os.path.isdir(pc)
        cache.release("alice", c.digest)
        cache.release("alice", a.digest)
        await cache.acquire("bob", d.digest, fetcher(d.data, []))
        assert not os.path.exists(pa) and os.path.isdir(pc)
        return cache.stats["evicted"]

    assert trio.run(main) == 2
    assert len(cache) == 2


def test_the_bytes_bound_evicts_too(tmp_path):
    """Past max_bytes of unpacked files, the oldest entries not in use go."""
    a, b = archive(tmp_path, body="A = '" + "a" * 600 + "'\n"), archive(tmp_path, body="B = '" + "b" * 600 + "'\n")
    cache = CodeCache.make(shared_with_task_users=False, max_bytes=1000, limits=CodeLimits(max_bytes=1000))
    try:

        async def main():
            pa = await cache.acquire("alice", a.digest, fetcher(a.data, []))
            cache.release("alice", a.digest)
            await cache.acquire("alice", b.digest, fetcher(b.data, []))
            return pa

        assert not os.path.exists(trio.run(main))
        assert cache.bytes <= 1000
    finally:
        cache.close()


def test_a_cache_smaller_than_one_archive_is_refused():
    with pytest.raises(ValueError, match="code_cache_bytes must be an int of at least"):
        CodeCache("/nonexistent", max_bytes=10)


def test_the_node_monitors_bounds_are_checked_with_its_config():
    """NodeMonitorConfig refuses a cache that cannot hold one archive at its limits, or no entry, naming the
    setting."""
    from sparrow_runtime import NodeMonitorConfig

    with pytest.raises(ValueError, match="code_cache_bytes must be an int of at least"):
        NodeMonitorConfig(code_cache_bytes=10)
    with pytest.raises(ValueError, match="code_cache_entries must be an int >= 1"):
        NodeMonitorConfig(code_cache_entries=0)
