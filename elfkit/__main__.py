import sys

from .tools.main import main

sys.exit(main())
