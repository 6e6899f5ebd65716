"""The version of the PARL distributions released together (core, utils, remote)."""

__version__ = "0.1.0"
