"""``scalpel mcp``: a stdio MCP proxy that lists only the tools a task needs.

* ``rank.py``    a local TF-IDF index over tool names and descriptions
* ``routing.py`` the pure routing state: which tools are listed, search and reveal
* ``recent.py``  recently called tools, remembered per upstream command
* ``stdio.py``   the JSON-RPC plumbing between the client, the router and the upstream
"""
