"""Validators: the trust boundary (sandboxed execution) and all scoring of generated programs."""
