"""The REST API (FastAPI, under /v1): generations, validation, sessions and versions, assets."""
