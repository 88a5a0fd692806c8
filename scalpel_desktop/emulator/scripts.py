"""Named scripts for tests, benchmarks and ``scalpel emulator --script NAME``.

``claude_code_session(workdir)`` drives a real Claude Code 2.1.332 through a
multi-tool session (Read, Bash, Edit, a failing Bash command, a re-Read,
parallel Read + Bash, a subagent through the ``Agent`` tool whose own turns
Read and answer, then a final text), plus a ``resume`` track answering the
prompts of ``--resume`` / ``--continue``. ``prepare_workdir(workdir)`` writes
the files it works on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from scalpel_desktop.emulator.script import Script, ToolCall, Turn, call, parallel, say

NOTES = "Project notes\n=============\nTODO: fix the greeting\nThe app prints a greeting.\n"
APP = 'def greet(name):\n    # TODO: use f-string\n    return "Hello, " + name\n\nif __name__ == "__main__":\n    print(greet("world"))\n'
FINAL_TEXT = ("Done. I read notes.txt, listed the directory, changed the TODO line to DONE, saw a missing "
              "file fail, re-read the notes, looked at app.py and asked a subagent to check the notes.")
SUBAGENT_TEXT = "The third line of notes.txt reads: DONE: fixed the greeting."
RESUME_TEXT = "Resumed: notes.txt still says DONE."


def prepare_workdir(workdir: str | os.PathLike) -> Path:
    """The project the Claude Code session works on (notes.txt, app.py)."""
    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    (root / "app.py").write_text(APP, encoding="utf-8")
    return root


def claude_code_session(workdir: str | os.PathLike, agent_tool: str = "Agent") -> Script:
    """The scripted multi-tool Claude Code session (see the module docstring).

    ``agent_tool``: "Agent" for Claude Code 2.1.x, "Task" for 2.0.x."""
    root = Path(workdir).resolve()
    notes, app = str(root / "notes.txt"), str(root / "app.py")
    main = [
        call("Read", "I'll start by reading the notes file.", file_path=notes),
        call("Bash", command="ls -la", description="List files in the project directory"),
        call("Edit", file_path=notes, old_string="TODO: fix the greeting", new_string="DONE: fixed the greeting"),
        call("Bash", "Now a command that is expected to fail.",
             command="cat does-not-exist.txt", description="Show a missing file"),
        call("Read", file_path=notes),
        parallel(ToolCall("Read", {"file_path": app}),
                 ToolCall("Bash", {"command": "grep -n TODO notes.txt app.py", "description": "Search for TODO markers"})),
        call(agent_tool, description="Check the notes",
             prompt="SCRIPT:subagent Read notes.txt and report its third line.",
             subagent_type="general-purpose", **({"run_in_background": False} if agent_tool == "Agent" else {})),
        say(FINAL_TEXT),
    ]
    subagent = [call("Read", file_path=notes), say(SUBAGENT_TEXT)]
    resume = [call("Read", file_path=notes), say(RESUME_TEXT)]
    return Script(main=main, tracks={"subagent": subagent, "resume": resume},
                  final_text="Nothing more to do.", side_text="OK.", detect_side=True, name="claude_code_session")


LONG_FILE = "design.txt"
LONG_TEXT = "Done: the design notes are updated and every step checked."


def prepare_long_workdir(workdir: str | os.PathLike, kb: int = 80) -> Path:
    """The project of ``long_session``: one large file (``kb`` KB of design notes) to read once."""
    root = prepare_workdir(workdir)
    lines = [f"Design note {i}: the greeting module prints a friendly message; keep it short and clear.\n"
             for i in range(kb * 1024 // 90)]
    (root / LONG_FILE).write_text("STATUS: draft\n" + "".join(lines), encoding="utf-8")
    return root


def long_session(workdir: str | os.PathLike, turns: int = 55) -> Script:
    """A long session with no idle gap whose one large read dies early: Read the design notes,
    Edit them (the read is superseded: dead), then ``turns`` small Bash steps, then a text. What a
    warm cut at death is for (issue 23): the dead read rides along on every later request."""
    path = str(Path(workdir).resolve() / LONG_FILE)
    main = [call("Read", "I'll read the design notes.", file_path=path),
            call("Edit", file_path=path, old_string="STATUS: draft", new_string="STATUS: reviewed")]
    main += [call("Bash", command=f"echo step {i}", description=f"Step {i}") for i in range(turns)]
    main.append(say(LONG_TEXT))
    return Script(main=main, final_text="Nothing more to do.", side_text="OK.", detect_side=True,
                  name="long_session")


def text_reply(text: str = "Hello from the scalpel emulator.") -> Script:
    """Every request gets one text answer."""
    return Script(main=[say(text)], final_text=text, name="text")


def tool_loop(tool: str = "get_weather", turns: int = 2, **tool_input: Any) -> Script:
    """``turns`` tool calls of ``tool`` (for SDK clients declaring that tool), then a text."""
    inp = tool_input or {"city": "Paris"}
    return Script(main=[call(tool, **inp) for _ in range(turns)] + [say("All done.")], name="tool_loop")


def parallel_tools(*names: str) -> Script:
    """One turn of parallel calls (default two ``get_weather`` calls), then a text."""
    names = names or ("get_weather", "get_weather")
    return Script(main=[parallel(*[(n, {"city": f"City {i}"}) for i, n in enumerate(names)]), say("Both done.")],
                  name="parallel")


NAMED: dict[str, Callable[..., Script]] = {
    "default": text_reply,
    "text": text_reply,
    "claude_code_session": claude_code_session,
    "long_session": long_session,
    "tool_loop": tool_loop,
    "parallel": parallel_tools,
}


def named_script(name: str, **kwargs: Any) -> Script:
    """A script by name; ``claude_code_session`` takes ``workdir`` (default: the current directory)."""
    if name not in NAMED:
        raise KeyError(f"unknown script {name!r}; known: {', '.join(sorted(NAMED))}")
    if name in ("claude_code_session", "long_session") and "workdir" not in kwargs:
        kwargs["workdir"] = os.getcwd()
    return NAMED[name](**kwargs)


__all__ = ["NAMED", "Turn", "claude_code_session", "long_session", "named_script", "parallel_tools",
           "prepare_long_workdir", "prepare_workdir", "text_reply", "tool_loop"]
