"""Code that runs inside the sandbox. Stdlib only at import time: the warm worker preloads the rest."""
