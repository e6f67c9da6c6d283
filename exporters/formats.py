"""The export formats, their file suffixes and media types (no heavy imports: the CLI reads it)."""

from __future__ import annotations

FORMATS = ("glb", "step", "stl", "3mf", "ply", "spz", "splat-glb", "png")
SUFFIXES = {
    "glb": ".glb",
    "step": ".step",
    "stl": ".stl",
    "3mf": ".3mf",
    "ply": ".ply",
    "spz": ".spz",
    "splat-glb": ".splat.glb",
    "png": ".png",  # the preview: the multi-view rig of exporters/render.py
}
MEDIA_TYPES = {
    "glb": "model/gltf-binary",
    "step": "model/step",
    "stl": "model/stl",
    "3mf": "model/3mf",
    "ply": "application/ply",
    "spz": "application/octet-stream",
    "splat-glb": "model/gltf-binary",
    "png": "image/png",
    "manifest": "application/json",
}
GLB_COMPRESSIONS = ("none", "quantize", "draco")
STEP_SCHEMAS = ("AP242", "AP214")
