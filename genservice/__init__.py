"""genservice: generate programs and 3D assets, validate them in a sandbox, serve and train."""

__version__ = "0.1.0"
