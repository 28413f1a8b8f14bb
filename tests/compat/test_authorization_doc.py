"""The example of docs/authorization.md ("Try it"), run line by line with bash and curl against a fresh
`gravimeta serve` with authorization on: each command's answer must begin as the comment under it
shows (up to its `...`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.databases import fresh_database
from tests.support.servers import ServerProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "authorization.md"


def example() -> list[tuple[str, str | None]]:
    """(command, expected beginning of its answer or None) for each line of the "Try it" block."""
    text = DOC.read_text()
    block = re.search(r"## Try it\n.*?```bash\n(.*?)```", text, re.S)
    assert block is not None, "docs/authorization.md has no 'Try it' bash block"
    lines = block.group(1).splitlines()
    steps: list[tuple[str, str | None]] = []
    for i, line in enumerate(lines):
        if line.startswith("#") or not line.strip():
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        expected = following[2:].removesuffix("...") if following.startswith("# {") else None
        steps.append((line, expected))
    return steps


def test_the_example_answers_as_the_documentation_says(tmp_path):
    steps = example()
    assert sum(1 for _, expected in steps if expected) >= 10
    if not any(Path(p, "curl").exists() for p in ("/usr/bin", "/bin", "/usr/local/bin")):
        pytest.fail("curl is needed to run the documented example")
    with fresh_database("sqlite", tmp_path) as url:
        env = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": "admin"}
        with ServerProcess(url, workers=1, env=env, log_path=tmp_path / "server.log") as server:
            prelude = ""
            for command, expected in steps:
                if not command.startswith("curl"):
                    prelude += command + "\n"
                    continue
                done = subprocess.run(["bash", "-c", f"GM={server.url}\n{prelude}{command}"], capture_output=True,
                                      text=True, timeout=30)
                assert done.returncode == 0, (command, done.stderr)
                if expected is not None:
                    assert done.stdout.startswith(expected), f"{command}\nanswered {done.stdout[:300]}\nnot {expected}"
