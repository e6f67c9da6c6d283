/**
 * A version's GLB as a three.js object: its parts (one named node per part under the model's
 * root), feature edges drawn over the faces, the bounds used to fit the view, a translucent
 * "ghost" copy for comparisons, and disposal of GPU resources.
 */
import * as THREE from "three";
import { GLTFLoader } from "three/addons/loaders/GLTFLoader.js";

export interface Part {
  name: string;
  object: THREE.Object3D;
}

export interface LoadedModel {
  root: THREE.Object3D;
  parts: Part[];
  box: THREE.Box3;
  sphere: THREE.Sphere;
}

const EDGE_MATERIAL = new THREE.LineBasicMaterial({ color: 0x2b2f36 });

function hasMesh(object: THREE.Object3D): boolean {
  let found = false;
  object.traverse((o) => {
    if ((o as THREE.Mesh).isMesh) found = true;
  });
  return found;
}

/** The nodes that are parts: the children of the model's root node (or the meshes themselves). */
function findParts(scene: THREE.Object3D): Part[] {
  let root: THREE.Object3D = scene;
  while (root.children.length === 1 && !(root.children[0] as THREE.Mesh).isMesh) root = root.children[0];
  const nodes = root.children.filter(hasMesh);
  const parts = nodes.length > 0 ? nodes : [root];
  return parts.map((object, i) => ({ name: object.name || `part ${i + 1}`, object }));
}

/** Parse GLB bytes (metres, +Y up) into a model with edges and bounds. */
export async function parseGlb(bytes: ArrayBuffer): Promise<LoadedModel> {
  const gltf = await new GLTFLoader().parseAsync(bytes, "");
  const root = gltf.scene;
  const meshes: THREE.Mesh[] = [];
  root.traverse((o) => {
    if ((o as THREE.Mesh).isMesh) meshes.push(o as THREE.Mesh);
  });
  for (const mesh of meshes) {
    const edges = new THREE.LineSegments(new THREE.EdgesGeometry(mesh.geometry, 30), EDGE_MATERIAL.clone());
    edges.name = `${mesh.name}#edges`;
    edges.raycast = () => {}; // measuring picks faces only
    mesh.add(edges);
  }
  root.updateMatrixWorld(true);
  const box = new THREE.Box3().setFromObject(root);
  if (box.isEmpty()) box.set(new THREE.Vector3(-0.01, -0.01, -0.01), new THREE.Vector3(0.01, 0.01, 0.01));
  const sphere = box.getBoundingSphere(new THREE.Sphere());
  return { root, parts: findParts(root), box, sphere };
}

/** Turn a model translucent, in one colour, to draw it over another to compare geometry. */
export function ghost(model: LoadedModel, color = 0xff7a00): THREE.Object3D {
  const copy = model.root;
  for (const old of materialsOf(copy)) old.dispose();
  const material = new THREE.MeshStandardMaterial({
    color,
    transparent: true,
    opacity: 0.35,
    depthWrite: false,
    depthTest: false, // drawn over the current model, hidden parts included
  });
  const edgeMaterial = new THREE.LineBasicMaterial({ color, transparent: true, opacity: 0.8, depthTest: false });
  copy.traverse((o) => {
    o.renderOrder = 1;
    if ((o as THREE.LineSegments).isLineSegments) (o as THREE.LineSegments).material = edgeMaterial;
    else if ((o as THREE.Mesh).isMesh) {
      (o as THREE.Mesh).material = material;
    }
  });
  copy.name = "compare-overlay";
  return copy;
}

/** Every material in a subtree (for clipping planes and side). */
export function materialsOf(root: THREE.Object3D): THREE.Material[] {
  const out = new Set<THREE.Material>();
  root.traverse((o) => {
    const m = (o as THREE.Mesh).material as THREE.Material | THREE.Material[] | undefined;
    if (Array.isArray(m)) m.forEach((x) => out.add(x));
    else if (m) out.add(m);
  });
  return [...out];
}

/** Free the GPU memory of a subtree. */
export function dispose(root: THREE.Object3D): void {
  root.traverse((o) => {
    const mesh = o as THREE.Mesh;
    if (mesh.geometry) mesh.geometry.dispose();
  });
  for (const material of materialsOf(root)) {
    for (const value of Object.values(material)) {
      if (value instanceof THREE.Texture) value.dispose();
    }
    material.dispose();
  }
}
