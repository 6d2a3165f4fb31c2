"""`sparrow certs`: make a cluster CA (`init`) and issue keys and certificates from it (`issue`).

    sparrow certs init --certs-dir /etc/sparrow/tls
    sparrow certs issue sched-1 --role scheduler --host sched-1.example --certs-dir /etc/sparrow/tls
    sparrow certs issue alice --role client --user alice --certs-dir /etc/sparrow/tls

`issue` writes NAME.pem and NAME-key.pem (mode 0600) next to the CA; give every peer ca.pem, its own
pair, and keep ca-key.pem where only whoever issues certificates can read it (wire/certs.py).
"""

from __future__ import annotations

import argparse

from ..wire.certs import DEFAULT_CA_DAYS, DEFAULT_DAYS, CertError, init_ca, issue
from ..wire.tls import ROLES
from .common import CommandError, add_command, settings


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "certs",
        run,
        help="make a cluster CA and the certificates of its peers (TLS)",
        description="`sparrow certs init` makes a CA (ca.pem, ca-key.pem) in --certs-dir; `sparrow certs issue "
        "NAME --role ROLE [--user USER]` issues NAME.pem and NAME-key.pem signed by it. The role (scheduler, "
        "node-monitor, client, admin, monitor) is the subject's OU, a client's or admin's user (default: NAME) its "
        "UID: a client runs jobs as its user and sees only that user's jobs; an admin sees all and may name any "
        "user; a monitor (Prometheus) only reads the services' HTTPS metrics and dashboards, as an admin may.",
    )
    parser.add_argument("action", choices=("init", "issue"), help="init: make the CA; issue: a key and certificate")
    parser.add_argument("name", nargs="?", help="issue: the holder's name (the subject's CN, and its file names)")
    parser.add_argument("--role", choices=ROLES, help="issue: what the certificate may connect as")
    parser.add_argument("--user", default="", help="issue: a client's or admin's user (default: NAME)")
    parser.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="HOST",
        help="issue: a host name or IP address the holder serves HTTPS at (metrics, dashboard), which Prometheus "
        "and curl check against the certificate (its names: NAME and each --host); repeatable",
    )


def run(args: argparse.Namespace) -> int:
    s = settings("certs", args)
    folder = s["certs_dir"]
    try:
        if args.action == "init":
            if args.name or args.role or args.user or args.host:
                raise CommandError("`sparrow certs init` takes no NAME, --role, --user or --host")
            cert, key = init_ca(folder, days=int(s["days"] or DEFAULT_CA_DAYS), force=s["force"])
            print(f"sparrow certs: CA certificate {cert} (give it to every peer), CA key {key} (keep it private)")
            return 0
        if not args.name or not args.role:
            raise CommandError("`sparrow certs issue` needs a NAME and --role (" + "|".join(ROLES) + ")")
        cert, key = issue(
            folder,
            args.name,
            args.role,
            user=args.user,
            days=s["days"] or DEFAULT_DAYS,
            force=s["force"],
            hosts=args.host,
        )
    except CertError as exc:
        raise CommandError(str(exc)) from None
    user = f", user {args.user or args.name}" if args.role in ("client", "admin") else ""
    hosts = f", hosts {', '.join(args.host)}" if args.host else ""
    print(f"sparrow certs: {args.role} {args.name}{user}{hosts}: certificate {cert}, key {key}")
    return 0
