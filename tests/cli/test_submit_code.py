"""`sparrow submit --py-modules ... --working-dir ...`: a package and a script that exist only in the client's
folder run on a node monitor started elsewhere, a changed file is run by the next submit, and code over a limit
is refused in one line before anything is sent; real processes on loopback."""

from __future__ import annotations

import os

from .conftest import clean_env, run_sparrow
from .test_services import write_secret
from .test_submit_control import ADDRESS

LIB = "def work(i):\n    return ('v{version}', i, 'sparrow-code-' in __file__)\n"  # imported from the shipped copy


def test_submit_ships_a_package_and_a_working_directory_and_the_next_submit_sees_a_change(running, tmp_path):
    """`mylib:work` from --py-modules and `./job.sh` from --working-dir run on a node monitor, imported from its
    copy of them; after the package changes, the next submit prints the new version."""
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret)], env)
    address = scheduler.wait_for(ADDRESS).group(1)
    node = running(
        ["node-monitor", "--insecure", "--scheduler", address, "--slots", "1", "--secret-file", str(secret)],
        env,
    )
    node.wait_for(ADDRESS)
    client = tmp_path / "client"
    (client / "src" / "mylib").mkdir(parents=True)
    (client / "src" / "mylib" / "__init__.py").write_text(LIB.format(version=1))
    (client / "job").mkdir()
    (client / "job" / "job.sh").write_text('#!/bin/sh\necho "task $SPARROW_TASK_INDEX in $(basename $(pwd))"\n')
    os.chmod(client / "job" / "job.sh", 0o755)
    common = ["submit", "--scheduler", address, "--secret-file", str(secret), "--tasks", "2"]
    code = ["--py-modules", "src/mylib", "--working-dir", "job"]

    done = run_sparrow(*common, *code, "mylib:work", env=env, cwd=client)
    assert done.returncode == 0, done.stderr
    assert "[0] ('v1', 0, True)" in done.stdout and "[1] ('v1', 1, True)" in done.stdout

    (client / "src" / "mylib" / "__init__.py").write_text(LIB.format(version=2))
    done = run_sparrow(*common, *code, "mylib:work", env=env, cwd=client)
    assert done.returncode == 0, done.stderr
    assert "[0] ('v2', 0, True)" in done.stdout

    done = run_sparrow(*common, *code, "--", "./job.sh", env=env, cwd=client)
    assert done.returncode == 0, done.stderr
    assert "[0] task 0 in wd" in done.stdout and "[1] task 1 in wd" in done.stdout

    os.symlink(tmp_path / "secret", client / "job" / "leak")
    done = run_sparrow(*common, *code, "--", "./job.sh", env=env, cwd=client)
    assert done.returncode != 0
    assert "links out of its directory" in done.stderr and "Traceback" not in done.stderr
