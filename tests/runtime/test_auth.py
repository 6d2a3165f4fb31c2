"""The cluster secret and the handshake proofs (auth.py)."""

import pytest

from sparrow_runtime import auth


def test_secret_precedence_argument_then_file_then_environment(tmp_path, monkeypatch):
    path = tmp_path / "secret"
    path.write_text("from-file\n")
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
    with pytest.raises(ValueError, match="is empty"):
        auth.load_secret(secret_file=empty)
    with pytest.raises(TypeError, match="secret must be str or bytes"):
        auth.load_secret(secret=3)


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
