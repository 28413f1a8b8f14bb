"""The race demo's progress line rewrites itself on a terminal and does not flood a log elsewhere."""

from __future__ import annotations

from gravimeta.demo.commands import Progress


def test_off_a_terminal_progress_is_a_plain_line_now_and_then_and_the_last_one(capsys):
    progress = Progress(tty=False, every_s=3600)
    for done in range(1, 101):
        progress.show(f"[race] {done}/100 ops")
    progress.end()
    assert capsys.readouterr().out == "[race] 1/100 ops\n[race] 100/100 ops\n"


def test_on_a_terminal_progress_rewrites_one_line(capsys):
    progress = Progress(tty=True)
    progress.show("[race] 1/2 ops")
    progress.show("[race] 2/2 ops")
    progress.end()
    assert capsys.readouterr().out == "\r[race] 1/2 ops\r[race] 2/2 ops\n"
