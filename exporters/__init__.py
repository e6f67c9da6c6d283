"""Exporters: the files a person downloads (GLB/glTF, STEP, STL, splats) with provenance."""
