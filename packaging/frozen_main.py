"""Entry point of the PyInstaller bundle (packaging/fleetmon.spec): `dist/fleetmon/fleetmon ARGS`.

In the bundle ``sys.executable`` is the app itself, not a Python interpreter, so
code that starts ``[sys.executable, "-m", "fleetmon", ...]`` (the demo's simulated
agents) reaches this script with ``-m fleetmon`` in front of its arguments; they
are dropped here and the rest is the usual command line.
"""

import sys

from fleetmon.cli import main

if sys.argv[1:3] == ["-m", "fleetmon"]:
    del sys.argv[1:3]
raise SystemExit(main())
