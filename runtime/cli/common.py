"""What the `sparrow` commands share: their settings, one-line errors, and how a client finds
its cluster and credentials (flags, environment, config file, else the running `sparrow local`).

Credentials are the keyword arguments of the services and of Client: {"tls": TLS} (TLS with the
cluster CA) or {"secret": bytes} (the insecure shared-secret mode, which a service runs only with
--insecure, and says so in a warning)."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable

from ..client.local_state import running_local_cluster
from ..services.cpus import pin_process
from ..services.logsetup import setup_logging
from ..services.processes import SECRET_VARIABLES
from ..wire.auth import SECRET_ENV, load_secret
from ..wire.tls import TLS, TLSConfigError, load_tls
from .config import CONFIG, RESEARCH, Resolved, resolve
from .help_all import hide_until_help_all
from .options import COMMANDS, EVERY_RETIRED, RETIRED

logger = logging.getLogger(__name__)
INSECURE_WARNING = (
    "running --insecure: no TLS; peers prove only that they know the cluster secret, and frames are neither "
    "encrypted nor authenticated (anyone on the path can read and forge them): use it on a single trusted host only"
)


class CommandError(Exception):
    """Stops a command: `sparrow` prints "sparrow COMMAND: error: MESSAGE" and exits 1."""


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    command: str,
    run: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    """Registers `sparrow COMMAND` with its documented settings (and --config); `run(args)`
    returns the exit code. Returns the parser for command-specific arguments."""
    parser = subparsers.add_parser(command, help=help, description=description)
    CONFIG.add_to(parser)
    research = parser.add_argument_group("research switches (the experiments' settings)")
    hidden = []
    for setting in COMMANDS[command]:
        if setting.group == RESEARCH:
            hidden += setting.add_to(research)
        else:
            setting.add_to(parser)
    if hidden:
        hide_until_help_all(parser, hidden)
    for old in RETIRED.get(command, ()):
        old.add_to(parser)
    parser.set_defaults(func=run)
    return parser


def settings(command: str, args: argparse.Namespace) -> Resolved:
    return resolve(command, COMMANDS[command], args, os.environ, COMMANDS, EVERY_RETIRED)


def read_secret_file(path: str) -> bytes:
    try:
        return load_secret(None, path)
    except OSError as exc:
        raise CommandError(f"cannot read the secret file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def given_secret(s: Resolved) -> bytes | None:
    """The secret a command was given: --secret-file, else SPARROW_SECRET, else the secret_file of
    SPARROW_SECRET_FILE or the config file; None if none of them is set."""
    if s.sources["secret_file"].startswith("--"):
        return read_secret_file(s["secret_file"])
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV].encode()
    if s["secret_file"] is not None:
        return read_secret_file(s["secret_file"])
    return None


def service_secret(s: Resolved) -> bytes:
    secret = given_secret(s)
    if secret is None:
        raise CommandError("no cluster secret: pass --secret-file FILE, or set SPARROW_SECRET or SPARROW_SECRET_FILE")
    return secret


def given_tls(s: Resolved) -> TLS | None:
    """The TLS credentials of --tls-ca, --tls-cert and --tls-key (or their variables, or the config
    file), None if none is set. Raises CommandError (one line) for some but not all, or unusable files."""
    try:
        return load_tls(s["tls_ca"], s["tls_cert"], s["tls_key"])
    except TLSConfigError as exc:
        raise CommandError(str(exc)) from None


def service_credentials(s: Resolved, role: str) -> dict:
    """The credentials of a service of `role`: its TLS files, or with --insecure the secret."""
    tls = given_tls(s)
    if tls is not None and s["insecure"]:
        raise CommandError("--insecure and TLS files are both given: give one")
    if tls is not None:
        if tls.identity.role != role:
            raise CommandError(
                f"{s['tls_cert']} is a {tls.identity.role} certificate: a {role} needs one issued with --role {role}"
            )
        return {"tls": tls}
    if not s["insecure"]:
        raise CommandError(
            "no TLS credentials: pass --tls-ca, --tls-cert and --tls-key (make them with `sparrow certs`), or "
            "--insecure to authenticate with a shared secret only, on a single trusted host"
        )
    return {"secret": service_secret(s)}


def prepare_service(s: Resolved, role: str) -> dict:
    """What `sparrow scheduler` and `sparrow node-monitor` do first: read the credentials, pin the
    process to its `cpus` setting, if set (before it starts threads or executors), and set up
    logging (with a warning when --insecure). Returns the credentials (see the module's comment), and
    removes the secret's variables from this process's environment: nothing this service starts or
    runs inherits them."""
    credentials = service_credentials(s, role)
    secret = credentials.get("secret")
    for name in SECRET_VARIABLES:
        os.environ.pop(name, None)
    if s["cpus"] is not None:
        try:
            pin_process(s["cpus"])
        except ValueError as exc:
            raise CommandError(f"--cpus: {exc}") from None
    setup_logging(s["log_level"], secret=secret)
    if secret is not None:
        logger.warning(INSECURE_WARNING)
    return credentials


def client_target(s: Resolved) -> tuple[list[str], dict]:
    """The scheduler addresses and the credentials of a client command (submit, status): as given,
    else those of the `sparrow local` running on this host."""
    schedulers, tls = s["scheduler"], given_tls(s)
    secret = None if tls is not None else given_secret(s)
    if schedulers and (tls is not None or secret is not None):
        return schedulers, {"tls": tls} if tls is not None else {"secret": secret}
    try:
        state = running_local_cluster()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except LookupError as exc:
        missing = "no scheduler to connect to" if not schedulers else "no credentials"
        raise CommandError(
            f"{missing}: pass --scheduler HOST:PORT and --tls-ca, --tls-cert and --tls-key (or --secret-file FILE "
            f"for an --insecure cluster), or start `sparrow local` on this host ({exc})"
        ) from None
    schedulers = schedulers or state.schedulers
    if tls is not None:
        return schedulers, {"tls": tls}
    if secret is not None:
        return schedulers, {"secret": secret}
    if state.tls_files is not None:
        try:
            return schedulers, {"tls": state.tls()}
        except TLSConfigError as exc:
            raise CommandError(f"the local cluster's client credentials: {exc}") from None
    return schedulers, {"secret": read_secret_file(state.secret_file)}
