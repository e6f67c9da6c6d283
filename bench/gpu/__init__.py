"""The accelerator proof run: `bench/gpu/run.sh` (or `python -m bench.gpu.bench`)."""
