"""Procedural task families (CAD parts, scenes, code) and the corpus builder."""
