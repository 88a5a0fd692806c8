"""A 45-tool MCP catalogue (a 'dev workspace' server) and labelled routing queries."""

from __future__ import annotations

TOOLS: list[tuple[str, str, dict[str, str]]] = [
    ("create_issue", "Create a new issue in a GitHub repository with a title, body and labels.", {"repo": "owner/name", "title": "Issue title", "body": "Markdown body"}),
    ("list_issues", "List open or closed issues of a GitHub repository, filtered by label or assignee.", {"repo": "owner/name", "state": "open or closed"}),
    ("comment_on_issue", "Add a comment to an existing GitHub issue.", {"repo": "owner/name", "number": "Issue number", "body": "Comment text"}),
    ("close_issue", "Close a GitHub issue, optionally with a reason.", {"repo": "owner/name", "number": "Issue number"}),
    ("create_pull_request", "Open a pull request from a branch into the base branch.", {"repo": "owner/name", "head": "Source branch", "base": "Target branch"}),
    ("merge_pull_request", "Merge an approved pull request using merge, squash or rebase.", {"repo": "owner/name", "number": "PR number", "method": "merge|squash|rebase"}),
    ("review_pull_request", "Submit a review on a pull request: approve, request changes or comment.", {"number": "PR number", "event": "APPROVE etc."}),
    ("list_commits", "List the commits of a branch with author, date and message.", {"repo": "owner/name", "branch": "Branch name"}),
    ("create_branch", "Create a new git branch from a commit or another branch.", {"repo": "owner/name", "name": "New branch name"}),
    ("search_code", "Search source code across repositories for a text or regular expression.", {"query": "Search text"}),
    ("read_file", "Read the contents of a file from the local workspace.", {"path": "File path"}),
    ("write_file", "Write text content to a file in the local workspace, replacing it.", {"path": "File path", "content": "Text"}),
    ("list_directory", "List the files and folders inside a directory.", {"path": "Directory path"}),
    ("move_file", "Move or rename a file or directory.", {"source": "From", "destination": "To"}),
    ("delete_file", "Delete a file from the workspace.", {"path": "File path"}),
    ("file_info", "Show size, permissions and modification time of a file.", {"path": "File path"}),
    ("run_sql_query", "Run a read-only SQL query against the Postgres database and return rows.", {"sql": "SELECT statement"}),
    ("list_tables", "List the tables of the database schema.", {"schema": "Schema name"}),
    ("describe_table", "Describe the columns, types and indexes of a database table.", {"table": "Table name"}),
    ("send_slack_message", "Post a message to a Slack channel.", {"channel": "#channel", "text": "Message"}),
    ("list_slack_channels", "List the Slack channels of the workspace.", {}),
    ("slack_thread_replies", "Read the replies of a Slack thread.", {"channel": "#channel", "ts": "Thread timestamp"}),
    ("send_email", "Send an email to one or more recipients with subject and body.", {"to": "Addresses", "subject": "Subject", "body": "Body"}),
    ("search_email", "Search the mailbox for emails by sender, subject or date.", {"query": "Search terms"}),
    ("create_calendar_event", "Schedule a calendar event or meeting with attendees.", {"title": "Title", "start": "Start time", "attendees": "Emails"}),
    ("list_calendar_events", "List upcoming calendar events and meetings in a date range.", {"start": "From", "end": "To"}),
    ("get_weather", "Get the current weather and forecast for a city.", {"city": "City name"}),
    ("web_search", "Search the web and return result titles, links and snippets.", {"query": "Search terms"}),
    ("fetch_url", "Fetch a web page by URL and return its text.", {"url": "Address"}),
    ("translate_text", "Translate text between languages.", {"text": "Text", "target": "Target language"}),
    ("summarize_document", "Summarize a long document into key points.", {"text": "Document text"}),
    ("create_jira_ticket", "Create a Jira ticket in a project with summary and priority.", {"project": "Key", "summary": "Summary"}),
    ("update_jira_ticket", "Change the status, assignee or priority of a Jira ticket.", {"key": "Ticket key", "status": "New status"}),
    ("list_docker_containers", "List running Docker containers with their images and ports.", {}),
    ("restart_container", "Restart a Docker container by name or id.", {"container": "Name or id"}),
    ("container_logs", "Show the recent logs of a Docker container.", {"container": "Name or id", "lines": "How many"}),
    ("deploy_service", "Deploy a service version to the Kubernetes cluster.", {"service": "Service", "version": "Image tag"}),
    ("scale_deployment", "Scale a Kubernetes deployment to a number of replicas.", {"deployment": "Name", "replicas": "Count"}),
    ("get_metrics", "Query CPU, memory and latency metrics from Prometheus for a service.", {"service": "Service", "metric": "Metric name"}),
    ("create_alert", "Create a monitoring alert rule with a threshold and notification channel.", {"metric": "Metric", "threshold": "Value"}),
    ("run_tests", "Run the project's unit test suite and report failures.", {"path": "Test path"}),
    ("lint_code", "Run the linter on source files and report style problems.", {"path": "Path"}),
    ("format_code", "Format source files with the project's code formatter.", {"path": "Path"}),
    ("install_package", "Install a Python or npm package into the project.", {"name": "Package", "manager": "pip or npm"}),
    ("generate_image", "Generate an image from a text prompt.", {"prompt": "Description"}),
]

# (query, the tool it should find)
LABELLED: list[tuple[str, str]] = [
    ("open a bug report on github", "create_issue"),
    ("merge the approved PR with squash", "merge_pull_request"),
    ("post an update to the team slack channel", "send_slack_message"),
    ("what tables are in the database schema", "list_tables"),
    ("run a SQL select against postgres", "run_sql_query"),
    ("schedule a meeting with the team next week", "create_calendar_event"),
    ("why is the container crashing, show its logs", "container_logs"),
    ("scale the kubernetes deployment to 5 replicas", "scale_deployment"),
    ("check cpu and memory latency metrics", "get_metrics"),
    ("rename this file to a new path", "move_file"),
    ("is it going to rain in Paris tomorrow", "get_weather"),
    ("translate this paragraph into German", "translate_text"),
    ("run the unit tests and show failures", "run_tests"),
    ("change the priority of a jira ticket", "update_jira_ticket"),
]


def tool_dicts() -> list[dict]:
    return [{"name": n, "description": d,
             "inputSchema": {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in p.items()},
                             "required": list(p)[:1]}}
            for n, d, p in TOOLS]
