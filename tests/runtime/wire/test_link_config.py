"""LinkConfig: a link's credentials, handshake deadline and frame limit as one frozen object; a bad value
is refused at construction naming its field, and the secret is never shown."""

from __future__ import annotations

import pytest

from sparrow_runtime import LinkConfig, SchedulerConfig


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_frame": 8}, "max_frame must be an int"),
        ({"handshake_timeout": 0}, "handshake_timeout must be a number of seconds > 0"),
        ({"secret": 5}, "secret must be str or bytes"),
        ({"tls": "ca.pem"}, "tls must be a TLS"),
    ],
)
def test_a_bad_link_config_names_its_field(fields, message):
    with pytest.raises(ValueError, match=message):
        LinkConfig(**fields)


def test_a_link_shares_a_secret_or_is_tls_not_both(cluster_certs):
    with pytest.raises(ValueError, match="give tls or secret, not both"):
        LinkConfig(secret=b"s", tls=cluster_certs.tls("sched"))


def test_a_link_keeps_its_secret_as_bytes_and_never_shows_it(monkeypatch):
    link = LinkConfig(secret="hunter2")
    assert (
        link.secret == b"hunter2" and "hunter2" not in repr(link) and "hunter2" not in repr(SchedulerConfig(link=link))
    )
    monkeypatch.setenv("SPARROW_SECRET", "from-env")
    assert LinkConfig().resolved().secret == b"from-env" and link.resolved() is link
    monkeypatch.delenv("SPARROW_SECRET")
    monkeypatch.delenv("SPARROW_SECRET_FILE", raising=False)
    with pytest.raises(ValueError, match="no cluster secret"):
        LinkConfig().resolved()
