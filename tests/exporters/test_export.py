"""Exported parts read back by real readers: Khronos validator, trimesh, OCP, gmsh, lib3mf."""

from __future__ import annotations

import json
import signal
import struct
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import DracoPy
import lib3mf
import numpy as np
import pytest
import trimesh

from exporters import gltf_validator
from exporters.export import ExportError, ExportOptions, ExportResult, export_script
from exporters.glb import accessor_array, read_glb
from exporters.provenance import GENERATED, GenerationRecord, verify
from exporters.samples import sample_names, sample_source

RECORD = GenerationRecord(created_at=datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC))
MESH_FORMATS = ("glb", "step", "stl", "3mf")


@pytest.fixture(scope="module")
def exports(pool, tmp_path_factory) -> dict[str, ExportResult]:
    """Every sample exported once to GLB, STEP, STL and 3MF."""
    out = tmp_path_factory.mktemp("exports")
    options = ExportOptions(formats=MESH_FORMATS)
    return {
        name: export_script(
            sample_source(name), out, pool, stem=name, record=RECORD, options=options
        )
        for name in sample_names()
    }


def _part_volume_mm3(result: ExportResult) -> float:
    return float(result.report.metrics["volume_mm3"])


def _loaded_mesh(path: Path, **kwargs) -> trimesh.Trimesh:
    loaded = trimesh.load(str(path), **kwargs)
    if isinstance(loaded, trimesh.Scene):
        loaded = loaded.to_mesh()
    assert isinstance(loaded, trimesh.Trimesh)
    return loaded


# --- glTF --------------------------------------------------------------------------------


def test_every_glb_passes_the_khronos_validator(exports, pool, tmp_path):
    files = [r.files["glb"] for r in exports.values()]
    for compression in ("quantize", "draco"):
        options = ExportOptions(formats=("glb",), glb_compression=compression)
        for name in ("flange", "table_scene"):
            result = export_script(
                sample_source(name), tmp_path / compression, pool, stem=name, options=options
            )
            files.append(result.files["glb"])
    reports = gltf_validator.validate_files(files)
    assert len(reports) == len(files)
    for report in reports:
        assert (report.errors, report.warnings) == (0, 0), (report.file, report.messages)


def test_a_10_mm_cube_is_a_centimetre_in_gltf_with_y_up(pool, tmp_path):
    source = "import cadquery as cq\nresult = cq.Workplane().box(10, 20, 30).translate((0, 0, 15))"
    result = export_script(source, tmp_path, pool, options=ExportOptions(formats=("glb",)))
    assert gltf_validator.validate_files([result.files["glb"]])[0].clean
    mesh = _loaded_mesh(result.files["glb"])
    # x stays x, CAD z (30 mm, resting on the ground) becomes glTF y, CAD y becomes glTF -z.
    assert np.allclose(mesh.extents, [0.010, 0.030, 0.020], atol=1e-7)
    assert np.allclose(mesh.bounds[0], [-0.005, 0.0, -0.010], atol=1e-7)


def test_glb_and_stl_round_trip_with_the_same_volume_and_watertight(exports):
    for name, result in exports.items():
        glb = _loaded_mesh(result.files["glb"])
        # glTF keeps one vertex per face where normals differ (sharp B-rep edges); welding
        # coincident positions (trimesh's default tolerance, 1e-8) restores the topology.
        glb.merge_vertices(merge_norm=True)
        stl = _loaded_mesh(result.files["stl"])
        brep = _part_volume_mm3(result)
        assert glb.is_watertight and stl.is_watertight, name
        assert glb.volume * 1e9 == pytest.approx(stl.volume, rel=1e-5), name
        # The tessellation is close to the exact B-rep volume (it is a mesh of it).
        assert stl.volume == pytest.approx(brep, rel=0.02), name


def test_glb_normals_are_unit_and_point_outward(exports):
    doc, binary = read_glb(exports["vase"].files["glb"].read_bytes())
    primitive = doc["meshes"][0]["primitives"][0]
    normals = accessor_array(doc, binary, primitive["attributes"]["NORMAL"])
    positions = accessor_array(doc, binary, primitive["attributes"]["POSITION"])
    assert np.allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-6)
    # The outside of the vase (not its inner wall, 2.5 mm in) faces away from its axis (glTF y).
    radial = positions[:, [0, 2]]
    widest = np.linalg.norm(radial, axis=1) > 0.97 * np.linalg.norm(radial, axis=1).max()
    assert (np.einsum("ij,ij->i", normals[widest][:, [0, 2]], radial[widest]) > 0).all()


def test_assembly_glb_keeps_part_names_and_colours(exports):
    doc, _ = read_glb(exports["table_scene"].files["glb"].read_bytes())
    names = [node["name"] for node in doc["nodes"]]
    assert names[0] == "table_scene"
    assert {"top", "mug", "leg_0", "leg_3"} <= set(names)
    colours = {
        mesh["name"]: doc["materials"][mesh["primitives"][0]["material"]]["pbrMetallicRoughness"][
            "baseColorFactor"
        ]
        for mesh in doc["meshes"]
    }
    assert colours["mug"] == pytest.approx([1.0, 0.0, 0.0, 1.0])
    assert colours["leg_0"] == pytest.approx([0.35, 0.2, 0.1, 1.0])
    # Legs stand on the ground (glTF y = 0) and the top is above them.
    scene = trimesh.load(str(exports["table_scene"].files["glb"]))
    assert scene.bounds[0][1] == pytest.approx(0.0, abs=1e-6)


def test_glb_carries_provenance_in_asset_extras_and_xmp(exports):
    result = exports["flange"]
    doc, _ = read_glb(result.files["glb"].read_bytes())
    extras = doc["asset"]["extras"]["provenance"]
    assert extras["id"] == result.provenance.id
    assert extras["manifest"] == "flange.manifest.json"
    packet = doc["extensions"]["KHR_xmp_json_ld"]["packets"][
        doc["asset"]["extensions"]["KHR_xmp_json_ld"]["packet"]
    ]
    assert packet["dcterms:provenance"] == "flange.manifest.json"
    assert packet["xmp:CreateDate"] == "2026-11-30T12:00:00Z"
    assert packet["Iptc4xmpExt:DigitalSourceType"].endswith("digitalCreation")
    assert "KHR_xmp_json_ld" in doc["extensionsUsed"]


def test_a_generated_program_is_marked_trained_algorithmic_media(pool, tmp_path):
    record = replace(RECORD, model_id="tiny", prompt="a cube", seed=3)
    source = "import cadquery as cq\nresult = cq.Workplane().box(5, 5, 5)"
    result = export_script(
        source, tmp_path, pool, record=record, options=ExportOptions(formats=("glb",))
    )
    manifest = json.loads(result.manifest.read_text())
    assert manifest["digital_source_type"] == GENERATED
    assert manifest["generation"]["prompt"] is None  # only its hash, unless asked
    assert len(manifest["generation"]["prompt_sha256"]) == 64
    doc, _ = read_glb(result.files["glb"].read_bytes())
    assert doc["asset"]["extras"]["provenance"]["digital_source_type"] == GENERATED
    assert gltf_validator.validate_files([result.files["glb"]])[0].clean


def test_quantized_and_draco_glbs_reproduce_the_geometry(exports, pool, tmp_path):
    plain_doc, plain_bin = read_glb(exports["knob"].files["glb"].read_bytes())
    reference = accessor_array(plain_doc, plain_bin, 0)
    extent = float(np.ptp(reference, axis=0).max())
    sizes = {}
    for compression in ("quantize", "draco"):
        options = ExportOptions(formats=("glb",), glb_compression=compression)
        result = export_script(
            sample_source("knob"), tmp_path / compression, pool, stem="knob", options=options
        )
        data = result.files["glb"].read_bytes()
        sizes[compression] = len(data)
        doc, binary = read_glb(data)
        primitive = doc["meshes"][0]["primitives"][0]
        if compression == "quantize":
            node = doc["nodes"][1]
            raw = accessor_array(doc, binary, primitive["attributes"]["POSITION"]).astype(float)
            points = raw * node["scale"][0] + np.array(node["translation"])
            assert doc["extensionsRequired"] == ["KHR_mesh_quantization"]
        else:
            view = doc["bufferViews"][
                primitive["extensions"]["KHR_draco_mesh_compression"]["bufferView"]
            ]
            start = view["byteOffset"]
            points = np.asarray(DracoPy.decode(binary[start : start + view["byteLength"]]).points)
        # Every decoded point lies on the original surface, within the quantisation step.
        distance = trimesh.proximity.closest_point_naive(
            trimesh.Trimesh(reference, accessor_array(plain_doc, plain_bin, 2).reshape(-1, 3)),
            points[:: max(1, len(points) // 300)],
        )[1]
        assert distance.max() < extent * 2.0**-14, compression
    assert sizes["draco"] < sizes["quantize"] < exports["knob"].files["glb"].stat().st_size


# --- STEP --------------------------------------------------------------------------------


def _ocp_read(path: Path) -> list:
    import cadquery as cq

    return [s for shape in cq.importers.importStep(str(path)).vals() for s in shape.Solids()]


def _ocp_precise_volume(solids: list) -> float:
    from OCP.BRepGProp import BRepGProp
    from OCP.GProp import GProp_GProps

    total = 0.0
    for solid in solids:
        props = GProp_GProps()
        BRepGProp.VolumeProperties_s(solid.wrapped, props, 1e-6, False)  # as the exporter
        total += props.Mass()
    return total


def _gmsh_volume_and_solids(path: Path) -> tuple[float, int]:
    import gmsh

    gmsh.initialize(["-noenv"], readConfigFiles=False, interruptible=False)
    # gmsh resets SIGPIPE to its default action in C; Python (and the tests) expect EPIPE.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("reimport")
        entities = gmsh.model.occ.importShapes(str(path))
        gmsh.model.occ.synchronize()
        volumes = [tag for dim, tag in entities if dim == 3]
        return sum(gmsh.model.occ.getMass(3, tag) for tag in volumes), len(volumes)
    finally:
        gmsh.finalize()


def test_every_step_reimports_in_ocp_and_gmsh_with_the_same_volume_and_solids(exports):
    for name, result in exports.items():
        path = result.files["step"]
        solids = int(result.report.metrics["solids"])
        exact = result.checks["step"]["volume_mm3"]  # the model's B-rep, adaptive integration
        assert exact == pytest.approx(_part_volume_mm3(result), rel=1e-4), name
        ocp = _ocp_read(path)
        assert len(ocp) == solids, name
        assert _ocp_precise_volume(ocp) == pytest.approx(exact, rel=1e-6), name
        # gmsh integrates with OCCT's default rule (a few 1e-6 off on offset surfaces), so it
        # is compared with the same rule applied to OCP's reading of the same file.
        gmsh_volume, gmsh_solids = _gmsh_volume_and_solids(path)
        assert gmsh_solids == solids, name
        assert gmsh_volume == pytest.approx(sum(s.Volume() for s in ocp), rel=1e-6), name
        assert gmsh_volume == pytest.approx(exact, rel=1e-4), name


def test_step_keeps_the_assembly_names_colours_and_a_deterministic_header(exports):
    text = exports["table_scene"].files["step"].read_text()
    header = text[: text.index("ENDSEC;")]
    assert "AP242_MANAGED_MODEL_BASED_3D_ENGINEERING" in header
    assert "'2026-11-30T12:00:00Z'" in header
    assert exports["table_scene"].provenance.id in header
    assert "genservice" in header
    for name in ("table", "legs", "leg_0", "top", "mug"):
        assert f"PRODUCT('{name}'" in text
    assert "COLOUR_RGB" in text or "DRAUGHTING_PRE_DEFINED_COLOUR('red')" in text


def test_the_same_input_gives_the_same_bytes(exports, pool, tmp_path):
    again = export_script(
        sample_source("table_scene"),
        tmp_path,
        pool,
        stem="table_scene",
        record=RECORD,
        options=ExportOptions(formats=MESH_FORMATS),
    )
    for fmt in MESH_FORMATS:
        assert again.files[fmt].read_bytes() == exports["table_scene"].files[fmt].read_bytes(), fmt


def test_step_schema_ap214_on_request(pool, tmp_path):
    options = ExportOptions(formats=("step",), step_schema="AP214")
    result = export_script(sample_source("flange"), tmp_path, pool, options=options)
    assert "AUTOMOTIVE_DESIGN" in result.files["step"].read_text()[:2000]


# --- STL and 3MF -------------------------------------------------------------------------


def test_stl_is_binary_with_a_provenance_header(exports):
    data = exports["flange"].files["stl"].read_bytes()
    assert not data.startswith(b"solid")
    assert exports["flange"].provenance.id.encode() in data[:80]
    (count,) = struct.unpack_from("<I", data, 80)
    assert len(data) == 84 + 50 * count


def test_3mf_reads_back_in_lib3mf_and_trimesh(exports):
    result = exports["table_scene"]
    wrapper = lib3mf.get_wrapper()
    model = wrapper.CreateModel()
    model.QueryReader("3mf").ReadFromFile(str(result.files["3mf"]))
    objects = model.GetMeshObjects()
    names, volume = [], 0.0
    while objects.MoveNext():
        mesh = objects.GetCurrentMeshObject()
        names.append(mesh.GetName())
        assert mesh.IsManifoldAndOriented(), mesh.GetName()
        points = np.array([v.Coordinates[0:3] for v in mesh.GetVertices()])
        faces = np.array([t.Indices[0:3] for t in mesh.GetTriangleIndices()])
        volume += trimesh.Trimesh(points, faces, process=False).volume
    assert {"top", "mug", "leg_0"} <= set(names)
    metadata = model.GetMetaDataGroup()
    values = [metadata.GetMetaData(i).GetValue() for i in range(metadata.GetMetaDataCount())]
    assert result.provenance.id in values
    assert volume == pytest.approx(_loaded_mesh(result.files["stl"]).volume, rel=1e-5)


# --- manifests and failures --------------------------------------------------------------


def test_manifests_verify_and_any_changed_byte_fails(exports, tmp_path):
    result = exports["knob"]
    manifest = json.loads(result.manifest.read_text())
    assert {f["name"] for f in manifest["files"]} == {p.name for p in result.files.values()}
    assert manifest["program"]["sha256"] == result.provenance.program_sha256
    assert manifest["report"]["valid"] is True
    assert "cadquery" in manifest["software"]
    for path in result.files.values():
        assert verify(path, result.manifest).ok, path
        data = bytearray(path.read_bytes())
        for position in (0, len(data) // 2, len(data) - 1):
            altered = tmp_path / path.name
            changed = bytearray(data)
            changed[position] ^= 0x01
            altered.write_bytes(bytes(changed))
            outcome = verify(altered, result.manifest)
            assert not outcome.ok and "altered" in outcome.problems[0], (path, position)


def test_an_invalid_script_exports_nothing_and_says_why(pool, tmp_path):
    broken = (
        "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\nresult = result.fillet(\n"
    )
    with pytest.raises(ExportError) as caught:
        export_script(broken, tmp_path, pool, options=ExportOptions(formats=MESH_FORMATS))
    assert "invalid" in str(caught.value) and caught.value.report is not None
    assert caught.value.report.error is not None and caught.value.report.error.kind == "syntax"
    empty = "import cadquery as cq\nresult = cq.Workplane().rect(10, 10)"  # no solid
    with pytest.raises(ExportError):
        export_script(empty, tmp_path, pool, options=ExportOptions(formats=MESH_FORMATS))
    assert list(tmp_path.iterdir()) == []


def test_export_options_reject_unknown_formats():
    with pytest.raises(ValueError, match="formats must be some of"):
        ExportOptions(formats=("obj",))
    with pytest.raises(ValueError, match="compression"):
        ExportOptions(glb_compression="zip")


def test_a_shape_occt_cannot_write_to_step_fails_with_a_reason_and_writes_nothing(pool, tmp_path):
    # Round sweep transitions make surfaces of revolution that OCCT's STEP writer distorts
    # (they read back ~10 % smaller); the export checks its own STEP and refuses.
    source = (
        "import cadquery as cq\n"
        "path = cq.Workplane('XZ').lineTo(0, 30).radiusArc((30, 60), -30).lineTo(60, 60)\n"
        "result = cq.Workplane().circle(6).circle(4).sweep(path, transition='round')\n"
    )
    with pytest.raises(ExportError, match=r"STEP export failed: .*reads back with volume"):
        export_script(source, tmp_path, pool, options=ExportOptions(formats=("glb", "step")))
    assert list(tmp_path.iterdir()) == []
    done = export_script(source, tmp_path, pool, options=ExportOptions(formats=("glb", "stl")))
    assert set(done.files) == {"glb", "stl"}
