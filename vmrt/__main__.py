import sys

from .tools.run import main

sys.exit(main())
