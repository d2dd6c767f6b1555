"""elfkit's infrastructure: slots records, lazy attributes, the code cache, private and
regular files, argument conversion and the light machine tables.

Not user API: code outside elfkit uses the public re-exports in :mod:`elfkit.support`.
"""
