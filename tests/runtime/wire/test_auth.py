"""The cluster secret and the handshake proofs (auth.py)."""

import os

import pytest

from sparrow_runtime.wire import auth


def test_secret_precedence_argument_then_file_then_environment(tmp_path, monkeypatch):
    path = tmp_path / "secret"
    path.write_text("from-file\n")
    path.chmod(0o600)
    monkeypatch.setenv(auth.SECRET_ENV, "from-env")
    assert auth.load_secret("given") == b"given"
    assert auth.load_secret(secret_file=path) == b"from-file"
    assert auth.load_secret() == b"from-env"
    monkeypatch.delenv(auth.SECRET_ENV)
    monkeypatch.setenv(auth.SECRET_FILE_ENV, str(path))
    assert auth.load_secret() == b"from-file"


def test_missing_or_empty_secret_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv(auth.SECRET_ENV, raising=False)
    monkeypatch.delenv(auth.SECRET_FILE_ENV, raising=False)
    with pytest.raises(ValueError, match="SPARROW_SECRET"):
        auth.load_secret()
    empty = tmp_path / "empty"
    empty.write_text("")
    empty.chmod(0o600)
    with pytest.raises(ValueError, match="is empty"):
        auth.load_secret(secret_file=empty)
    with pytest.raises(TypeError, match="secret must be str or bytes"):
        auth.load_secret(secret=3)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o610])
def test_secret_file_that_group_or_others_may_access_is_refused_with_the_fix(tmp_path, mode):
    """Like ssh with a private key: the message names the file and its mode, and says `chmod 600 FILE`."""
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    path.chmod(mode)
    with pytest.raises(ValueError) as info:
        auth.load_secret(secret_file=path)
    assert str(info.value) == (
        f"secret file {path} has mode {mode:04o}: group and others must have no access to it; "
        f"fix it with: chmod 600 {path}"
    )
    assert "s3cret" not in str(info.value)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_secret_file_private_to_its_owner_is_read(tmp_path, monkeypatch, mode):
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    path.chmod(mode)
    monkeypatch.delenv(auth.SECRET_ENV, raising=False)
    monkeypatch.setenv(auth.SECRET_FILE_ENV, str(path))
    assert auth.load_secret() == b"s3cret"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_group_readable_secret_file_owned_by_another_user_says_to_take_it_over(tmp_path):
    """A file root shares with a group (0640) is refused too; the fix makes it the reader's own."""
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    path.chmod(0o640)
    os.chown(path, 65534, 65534)
    with pytest.raises(ValueError, match=f"has mode 0640: .*fix it with: chown root {path} && chmod 600 {path}$"):
        auth.load_secret(secret_file=path)


def test_proof_binds_secret_direction_nonce_and_identities():
    nonce = auth.new_nonce()
    base = auth.proof(b"k", "client", nonce, 1, "client", "c1", "scheduler", "s")
    assert auth.verify(base, auth.proof(b"k", "client", nonce, 1, "client", "c1", "scheduler", "s"))
    for other in (
        auth.proof(b"other", "client", nonce, 1, "client", "c1", "scheduler", "s"),
        auth.proof(b"k", "server", nonce, 1, "client", "c1", "scheduler", "s"),
        auth.proof(b"k", "client", auth.new_nonce(), 1, "client", "c1", "scheduler", "s"),
        auth.proof(b"k", "client", nonce, 2, "client", "c1", "scheduler", "s"),
        auth.proof(b"k", "client", nonce, 1, "client", "c2", "scheduler", "s"),
    ):
        assert not auth.verify(base, other)
