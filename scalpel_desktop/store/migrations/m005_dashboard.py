"""m005: what the dashboard names and splits: project, context regions, the file a call read.

* ``requests.project``: the working directory Claude Code states in its
  environment message (``Primary working directory: ...``), shown under
  ``~`` (``paths.home_relative``): sessions are named by it. A path, not content.
* ``requests.regions``: JSON of estimated tokens per region of the body
  received (``accounting/context_regions.py``): system, tools, mcp_tools,
  messages, tool_results. Sizes only; the dashboard scales them to the
  request's measured prompt total and labels the split an estimate.
* ``tool_calls.target``: the file a call worked on (``file_path`` /
  ``notebook_path`` / ``path`` of its input, under ``~``), so ``scalpel log``
  can say which file a cut result came from. NULL for other tools.
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    if "project" not in have:
        conn.execute("ALTER TABLE requests ADD COLUMN project TEXT")
    if "regions" not in have:
        conn.execute("ALTER TABLE requests ADD COLUMN regions TEXT")
    calls = {r[1] for r in conn.execute("PRAGMA table_info(tool_calls)")}
    if calls and "target" not in calls:
        conn.execute("ALTER TABLE tool_calls ADD COLUMN target TEXT")
