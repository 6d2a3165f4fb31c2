"""Settings of the `sparrow` commands: declared once, read from flags, then SPARROW_* environment
variables, then an optional TOML file, then the documented default (first found wins).

A `Setting` names one value (`slots`), its kind (how text and TOML values become a typed value),
its default and its help. Its flag is `--slots` (repeatable for list kinds), its environment
variable `SPARROW_SLOTS`, its TOML key `slots`, either at the top level of the file (for every
command that has the setting) or in the command's own table (`[node-monitor]`), which wins.

Error handling: every bad value raises ConfigError naming the setting and where it came from
("--slots: ...", "SPARROW_SLOTS: ...", "config.toml: [node-monitor] slots: ..."); so does an
unknown key in the file, an unknown SPARROW_* variable (except those in ENV_OWNED_ELSEWHERE), a
file that is missing or not valid TOML. A retired setting (`Retired`) is refused in every source with
what to do instead.

Two audiences: a setting is an operator's (`--help` shows it) or a research switch (`group=RESEARCH`:
the experiments' knobs, shown by `--help-all`, and read like any other).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..services.cpus import MAX_CPU, parse_cpu_list
from ..services.weights import check_weights, parse_weight
from ..wire.address import format_address, parse_address
from ..wire.resources import parse_resources

ENV_PREFIX = "SPARROW_"
# SPARROW_* variables that are not settings of a command: the secret (read by auth.py), the index
# every `sparrow submit` shell task gets, the debug switch of the extension build, and the folder of
# the schedulers' placement logs (services/placement_log.py, for `sparrow experiment steal`).
ENV_OWNED_ELSEWHERE = frozenset({"SPARROW_SECRET", "SPARROW_TASK_INDEX", "SPARROW_DEBUG", "SPARROW_PLACEMENT_LOG"})


class ConfigError(Exception):
    """A setting is unknown, ill-typed or out of range; the message names it and its source."""


# -- kinds: how a value is read ---------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """`from_text` reads a flag or environment value; `from_toml` a value of the TOML file.
    Both raise ValueError with what was expected. `list_text` (for list kinds) splits the text
    of an environment variable; flags of list kinds are repeated instead."""

    describe: str
    from_text: Callable[[str], Any]
    from_toml: Callable[[Any], Any]
    is_list: bool = False


def _expect(what: str, value: Any) -> ValueError:
    return ValueError(f"expected {what}, got {value!r}")


def integer(low: int | None = None, high: int | None = None) -> Kind:
    if high is None:
        what = "an integer" + ("" if low is None else f" >= {low}")
    else:
        what = f"an integer <= {high}" if low is None else f"an integer from {low} to {high}"

    def check(value: int) -> int:
        if (low is not None and value < low) or (high is not None and value > high):
            raise _expect(what, value)
        return value

    def text(s: str) -> int:
        try:
            return check(int(s))
        except ValueError:
            raise _expect(what, s) from None

    def toml(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _expect(what, v)
        return check(v)

    return Kind(what, text, toml)


def number(low: float | None = None, high: float | None = None, *, open_low: bool = False) -> Kind:
    parts = []
    if low is not None:
        parts.append(f"{'>' if open_low else '>='} {low:g}")
    if high is not None:
        parts.append(f"< {high:g}")
    what = "a number" + ("" if not parts else " " + " and ".join(parts))

    def check(value: float) -> float:
        ok = math.isfinite(value)
        ok = ok and (low is None or (value > low if open_low else value >= low))
        ok = ok and (high is None or value < high)
        if not ok:
            raise _expect(what, value)
        return value

    def text(s: str) -> float:
        try:
            return check(float(s))
        except ValueError:
            raise _expect(what, s) from None

    def toml(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _expect(what, v)
        return check(float(v))

    return Kind(what, text, toml)


def choice(*options: str) -> Kind:
    what = "one of " + ", ".join(options)

    def check(v: Any) -> str:
        if not isinstance(v, str) or v.lower() not in options:
            raise _expect(what, v)
        return v.lower()

    return Kind(what, check, check)


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise _expect("a non-empty string", v)
    return v


def _boolean_text(s: str) -> bool:
    low = s.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise _expect("true or false", s)


def _boolean_toml(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _expect("true or false", v)
    return v


def _host_port(v: Any, allow_any_port: bool) -> tuple[str, int]:
    what = "an address host:port" + (" (port 0: any free port)" if allow_any_port else "")
    if not isinstance(v, str):
        raise _expect(what, v)
    any_port = allow_any_port and v.endswith(":0")
    try:
        host, port = parse_address(v[:-1] + "1" if any_port else v)
    except ValueError:
        raise _expect(what, v) from None
    return host, 0 if any_port else port


def _address(v: Any) -> str:
    return format_address(_host_port(v, False))


def _listen_address(v: Any) -> tuple[str, int]:
    return _host_port(v, True)


def _list_of(item: Callable[[Any], Any], what: str) -> Kind:
    def text(s: str) -> list:
        return [item(part.strip()) for part in s.split(",") if part.strip()]

    def toml(v: Any) -> list:
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list):
            raise _expect(what, v)
        return [item(x) for x in v]

    return Kind(what, text, toml, is_list=True)


def _weights_toml(v: Any) -> dict[str, float]:
    if not isinstance(v, dict):
        raise _expect("a table of user = weight", v)
    return check_weights(v)


def _cpu_list_toml(v: Any) -> list[int]:
    if isinstance(v, str):
        return parse_cpu_list(v)
    if isinstance(v, list) and v and all(type(x) is int and 0 <= x <= MAX_CPU for x in v):
        return sorted(set(v))
    raise _expect('a CPU list: a string like "0-3,6" or a list of CPU numbers', v)


TEXT = Kind("a non-empty string", _text, _text)
CPU_LIST = Kind("a CPU list like 0-3,6", parse_cpu_list, _cpu_list_toml)
BOOLEAN = Kind("true or false", _boolean_text, _boolean_toml)
# a (host, port) pair
LISTEN_ADDRESS = Kind("an address host:port (port 0: any free port)", _listen_address, _listen_address)
ADDRESSES = _list_of(_address, "addresses host:port")
TEXTS = _list_of(_text, "a list of strings")
RESOURCES = Kind("amounts like cpus=16,memory=64G,gpu=2", parse_resources, parse_resources)


def _request(spec: Any) -> Any:
    parse_resources(spec)  # ResourceError (a ValueError) naming what is wrong
    return spec


# a task's request as written (checked): the client puts it in units itself, as it does for every interface
REQUEST = Kind("amounts like gpu=1,cpus=2,memory=4GiB", _request, _request)
WEIGHTS = Kind(
    "USER=WEIGHT pairs",
    lambda s: dict(parse_weight(p.strip()) for p in s.split(",") if p.strip()),
    _weights_toml,
    is_list=True,
)


# -- settings --------------------------------------------------------------------------------------

OPERATOR = "operator"  # what an operator sets: shown by --help
RESEARCH = "research"  # an experiment's switch: shown by --help-all only


class _Named:
    """The flag and the environment variable of a named setting (`slots`: `--slots`, `SPARROW_SLOTS`)."""

    name: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


@dataclass(frozen=True)
class Setting(_Named):
    """One setting of a command. `default` None means "not set" (the command decides); `unset` then
    says in `--help` what that means ("the CPU count"). `group`: OPERATOR or RESEARCH (its help only
    under --help-all)."""

    name: str
    kind: Kind
    default: Any = None
    help: str = ""
    metavar: str | None = None
    unset: str = "none"
    group: str = OPERATOR

    def add_to(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> list[argparse.Action]:
        """Add this setting's flag, its help ending with its default and environment variable; its value
        stays None unless given (so lower sources can fill it). Returns the actions added (the flag, and
        its --no- form for a boolean on by default)."""
        shown = self.unset if self.default is None else _show(self.default)
        text = f"{self.help} (default: {shown}; env {self.env})".replace("%", "%%")
        if self.kind is BOOLEAN:
            added = [
                parser.add_argument(
                    self.flag, dest=self.name, action="store_const", const="true", default=None, help=text
                )
            ]
            if self.default is True:  # on by default: a flag to turn it off
                no = "--no-" + self.flag[2:]
                added.append(
                    parser.add_argument(
                        no, dest=self.name, action="store_const", const="false", help=f"{self.flag} off"
                    )
                )
            return added
        if self.kind.is_list:
            return [
                parser.add_argument(
                    self.flag, dest=self.name, action="append", default=None, metavar=self.metavar, help=text
                )
            ]
        return [parser.add_argument(self.flag, dest=self.name, default=None, metavar=self.metavar, help=text)]


@dataclass(frozen=True)
class Retired(_Named):
    """A setting that is gone. Its flag (and its --no- form), its SPARROW_* variable and its TOML key are
    refused, each with `instead`: what to do now (and why it went)."""

    name: str
    instead: str

    def problem(self, where: str) -> str:
        return f"{where} is retired: {self.instead}"

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Its flags, hidden from --help: given, they stop the parse with a usage error (exit status 2)."""
        parser.add_argument(
            self.flag, "--no-" + self.flag[2:], nargs="?", action=_RetiredFlag, retired=self, help=argparse.SUPPRESS
        )


class _RetiredFlag(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, *, retired: Retired, **kwargs: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)
        self.retired = retired

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        parser.error(self.retired.problem(option_string or self.retired.flag))


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value == "":
        return '""'
    if isinstance(value, tuple):
        return format_address(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v:g}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return str(value)


@dataclass(frozen=True)
class Resolved:
    """The value of every setting of a command, and where each came from ("--slots",
    "SPARROW_SLOTS", the config file's path, or "default")."""

    values: dict[str, Any]
    sources: dict[str, str]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


CONFIG = Setting("config", TEXT, help="read settings from this TOML file", metavar="FILE")


def resolve(
    command: str,
    settings: Sequence[Setting],
    args: argparse.Namespace,
    env: Mapping[str, str],
    every_command: Mapping[str, Sequence[Setting]],
    retired: Sequence[Retired] = (),
) -> Resolved:
    """Resolve `settings` of `command` from the parsed flags `args`, then `env`, then the TOML file
    named by --config / SPARROW_CONFIG (its `[command]` table, then its top level), then defaults.

    `every_command` (each command's settings) decides which variables and keys are unknown; a
    variable or key of `retired` is refused with what to do instead.
    """
    known_env = {s.env for group in every_command.values() for s in group} | {CONFIG.env}
    gone = {r.name: r for r in retired}
    for name in sorted(env):
        old = gone.get(name.removeprefix(ENV_PREFIX).lower()) if name.startswith(ENV_PREFIX) else None
        if old is not None:
            raise ConfigError(old.problem(name))
        if name.startswith(ENV_PREFIX) and name not in known_env and name not in ENV_OWNED_ELSEWHERE:
            raise ConfigError(f"unknown setting in the environment: {name}")
    config_file = getattr(args, CONFIG.name, None) or env.get(CONFIG.env) or None
    table = _load_file(config_file, every_command, gone) if config_file else {"": {}}
    mine = table.get(command, {})
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for s in settings:
        given = getattr(args, s.name, None)
        if given is not None and s.kind.is_list:
            value, source = _combine(_read(s.flag, item, s.kind.from_text) for item in given), s.flag
        elif given is not None:
            value, source = _read(s.flag, given, s.kind.from_text), s.flag
        elif s.env in env:
            value, source = _read(s.env, env[s.env], s.kind.from_text), s.env
        elif s.name in mine:
            value, source = (
                _read(f"{config_file}: [{command}] {s.name}", mine[s.name], s.kind.from_toml),
                str(config_file),
            )
        elif s.name in table[""]:
            value, source = _read(f"{config_file}: {s.name}", table[""][s.name], s.kind.from_toml), str(config_file)
        else:
            value, source = s.default, "default"
        values[s.name], sources[s.name] = value, source
    return Resolved(values, sources)


def _combine(parts: Iterable[Any]) -> Any:
    """Repeated flags of a list kind: lists are concatenated, tables (weights) merged."""
    parts = list(parts)
    if parts and isinstance(parts[0], dict):
        return {k: v for part in parts for k, v in part.items()}
    return [x for part in parts for x in part]


def _read(where: str, raw: Any, convert: Callable[[Any], Any]) -> Any:
    try:
        return convert(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _load_file(
    path: str, every_command: Mapping[str, Sequence[Setting]], retired: Mapping[str, Retired]
) -> dict[str, dict[str, Any]]:
    """The file as {"": its top-level settings, command: its table}. Every key must be a setting:
    of some command at the top level, of that command in its table; a retired one says what instead."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ConfigError("--config needs Python 3.11 or the tomli package to read TOML") from None
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    names = {cmd: {s.name for s in group} for cmd, group in every_command.items()}
    anywhere = set().union(*names.values())
    out: dict[str, dict[str, Any]] = {"": {}}
    for key, value in data.items():
        for old in (key, *(value if key in names and isinstance(value, dict) else ())):
            if old in retired:
                raise ConfigError(retired[old].problem(f"config file {path}: {old}"))
        if key in names and isinstance(value, dict):
            unknown = sorted(set(value) - names[key])
            if unknown:
                raise ConfigError(f"config file {path}: unknown setting {unknown[0]!r} in [{key}]")
            out[key] = value
        elif key in anywhere:
            out[""][key] = value
        else:
            raise ConfigError(f"config file {path}: unknown setting {key!r}")
    return out
