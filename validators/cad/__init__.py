"""CadQuery validation: run a script in the sandbox, check its geometry, compare to a reference."""
