"""Python counterparts of IREE's custom-module samples."""
