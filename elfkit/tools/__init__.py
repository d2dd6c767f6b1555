"""The ``elfkit`` command: the entry point (main.py), the command-line description and
parsers (cli_spec.py, cli_argparse.py) and one module per command family.
"""
