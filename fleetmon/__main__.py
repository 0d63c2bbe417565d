from fleetmon.cli import main

raise SystemExit(main())
