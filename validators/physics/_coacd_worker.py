"""Child process for convex decomposition: run as a script, never imported.

Reads a pickled list of (index, vertices, faces, coacd parameters) from the file named by
argv[1] and writes one pickled (index, pieces) per mesh to stdout as soon as it is done, where
pieces is a list of (vertices, faces) arrays, or None when coacd failed on that mesh.
"""

import ctypes
import os
import pickle
import signal
import sys

import numpy as np


def main() -> None:
    """Decompose every job in the input file, streaming results."""
    # Die with the validator that started us, even if it is killed outright.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # coacd logs to stdout: send that to stderr so it cannot corrupt the results
    import coacd

    coacd.set_log_level("error")
    with open(sys.argv[1], "rb") as handle:
        jobs = pickle.load(handle)
    for index, vertices, faces, params in jobs:
        try:
            pieces = coacd.run_coacd(coacd.Mesh(vertices, faces), **params)
            result = [(np.asarray(v, np.float64), np.asarray(f, np.int64)) for v, f in pieces]
        except Exception:  # a mesh coacd rejects falls back to its hull in the parent
            result = None
        pickle.dump((index, result), out)
        out.flush()


if __name__ == "__main__":
    main()
