"""The code a worker runs a task in (wire/code_env.py), driven as a worker drives it (run_task, one process for many
tasks): the shipped copy wins over a module of the same name imported before; a changed archive never gets the
old modules; a task without code sees none; the same code twice imports once; the result's class pickles by
name while the code is entered."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCENARIO = textwrap.dedent(
    """
    import json, os, pickle, sys
    from sparrow_runtime.data.dependent import worker_payload
    from sparrow_runtime.wire.task_codec import pack_task, run_task

    root = sys.argv[1]
    start = os.getcwd()
    def entry(name, version):
        path = os.path.join(root, name, "py", "shiplib")
        os.makedirs(path)
        with open(os.path.join(path, "__init__.py"), "w") as f:
            f.write(f"V = {version}\\nclass Box:\\n    pass\\ndef make():\\n    return Box()\\n")
            f.write(f"with open({os.path.join(root, 'imports.log')!r}, 'a') as log:\\n    log.write({name!r})\\n")
        return os.path.join(root, name)

    site = os.path.join(root, "site", "shiplib")  # an installed shiplib, imported before any code
    os.makedirs(site)
    with open(os.path.join(site, "__init__.py"), "w") as f:
        f.write("V = 0\\n")
    sys.path.append(os.path.dirname(site))
    import shiplib
    assert shiplib.V == 0

    def version(code):
        template = pack_task(eval, ("__import__('shiplib').V",))
        outcome = run_task(worker_payload(template, entry=code) if code else template)
        return pickle.loads(outcome.payload) if outcome.ok else outcome.error.splitlines()[-1]

    a, b = entry("a", 1), entry("b", 2)
    seen = [version(a), version(a), version(b), version(None), version(a)]
    box = run_task(worker_payload(pack_task(eval, ("__import__('shiplib').make()",)), entry=a))
    by_name = box.ok and b"Box" in box.payload and b"_make_skeleton_class" not in box.payload
    run_task(pack_task(abs, (1,)))  # leaves the code
    clean = all(not p.startswith(root + "/a") for p in sys.path) and os.getcwd() == start
    with open(os.path.join(root, "imports.log")) as log:
        imports = log.read()
    print(json.dumps({"seen": seen, "by_name": by_name, "clean": clean, "imports": imports}))
    """
)


def test_the_shipped_copy_wins_a_changed_archive_is_fresh_and_a_task_without_code_sees_the_installed_one(tmp_path):
    """Installed shiplib (V=0) imported first; then code a (V=1) twice, code b (V=2), no code, code a: each
    task gets its own code's module, the one without code the installed one, and sys.path is clean after."""
    ran = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["seen"] == [1, 1, 2, 0, 1]
    assert result["imports"] == "aba"  # a's second task took its stash; b dropped it, so a's third imported again
    assert result["by_name"]  # a result of a shipped class pickles by reference, while the code is entered
    assert result["clean"]  # sys.path and the working directory as they were once left
