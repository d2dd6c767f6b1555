"""VM bytecode modules: file format, decoder, translator, module."""
