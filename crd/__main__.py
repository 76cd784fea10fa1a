"""`python3 -m crd` (`make crd`; `--check` in `make lint`): gen.py's command line."""

import sys

from crd.gen import main

sys.exit(main())
