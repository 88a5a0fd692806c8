"""Entry point of the standalone build (PyInstaller): the `scalpel` command itself."""

from scalpel_desktop.cli import main

raise SystemExit(main())
