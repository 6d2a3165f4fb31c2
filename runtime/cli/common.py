"""What the `sparrow` commands share: their settings, one-line errors, and how a client finds
its cluster and secret (flags, environment, config file, else the running `sparrow local`)."""

from __future__ import annotations

import argparse
import os

from ..client.local_state import running_local_cluster
from ..services.cpus import pin_process
from ..services.logsetup import setup_logging
from ..services.processes import SECRET_VARIABLES
from ..wire.auth import SECRET_ENV, load_secret
from .config import CONFIG, Resolved, resolve
from .options import COMMANDS


class CommandError(Exception):
    """Stops a command: `sparrow` prints "sparrow COMMAND: error: MESSAGE" and exits 1."""


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    command: str,
    run,
    *,
    help: str,
    description: str,
) -> argparse.ArgumentParser:
    """Registers `sparrow COMMAND` with its documented settings (and --config); `run(args)`
    returns the exit code. Returns the parser for command-specific arguments."""
    parser = subparsers.add_parser(command, help=help, description=description)
    CONFIG.add_to(parser)
    for setting in COMMANDS[command]:
        setting.add_to(parser)
    parser.set_defaults(func=run)
    return parser


def settings(command: str, args: argparse.Namespace) -> Resolved:
    return resolve(command, COMMANDS[command], args, os.environ, COMMANDS)


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


def prepare_service(s: Resolved) -> bytes:
    """What `sparrow scheduler` and `sparrow node-monitor` do first: read the secret, pin the process
    to its `cpus` setting, if set (before it starts threads or executors), and set up logging.
    Returns the secret, and removes its variables from this process's environment: nothing this
    service starts or runs inherits them."""
    secret = service_secret(s)
    for name in SECRET_VARIABLES:
        os.environ.pop(name, None)
    if s["cpus"] is not None:
        try:
            pin_process(s["cpus"])
        except ValueError as exc:
            raise CommandError(f"--cpus: {exc}") from None
    setup_logging(s["log_level"], secret=secret)
    return secret


def client_target(s: Resolved) -> tuple[list[str], bytes]:
    """The scheduler addresses and the secret of a client command (submit, status): as given, else
    those of the `sparrow local` running on this host."""
    schedulers, secret = s["scheduler"], given_secret(s)
    if schedulers and secret is not None:
        return schedulers, secret
    try:
        state = running_local_cluster()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except LookupError as exc:
        missing = "no scheduler to connect to" if not schedulers else "no cluster secret"
        raise CommandError(
            f"{missing}: pass --scheduler HOST:PORT and --secret-file FILE (or set SPARROW_SCHEDULER and "
            f"SPARROW_SECRET), or start `sparrow local` on this host ({exc})"
        ) from None
    return schedulers or state.schedulers, secret if secret is not None else read_secret_file(state.secret_file)
