from scalpel_desktop.cli import main

raise SystemExit(main())
