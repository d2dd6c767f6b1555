"""Executable plugins (IREE's ``hal/local/plugins``): the shared interface
(``plugin.py``), the three kinds (``embedded.py``, ``system.py``,
``static.py``) and the plugin manager that asks them newest first
(``manager.py``).  Importing this package registers every kind with
:class:`ExecutablePlugin`."""
from . import embedded, static, system  # noqa: F401  (each registers its plugin kind)
