"""Code that runs inside the sandbox; stdlib only at import time (the worker preloads the rest)."""
