/**
 * The Gaussian-splat view of a version, drawn by Spark (@sparkjsdev/spark, loaded on first
 * use): SPZ or PLY bytes become a SplatMesh in the viewport's scene, in the same frame as the
 * GLB (metres, +Y up). While splats are shown the viewport renders every frame (Spark sorts
 * splats between frames).
 */
import type * as THREE from "three";
import type { Viewport } from "./viewport";

type SparkModule = typeof import("@sparkjsdev/spark");

let sparkModule: Promise<SparkModule> | null = null;
const loadSpark = () => (sparkModule ??= import("@sparkjsdev/spark"));

export class SplatLayer {
  private spark: THREE.Object3D | null = null;
  private mesh: (THREE.Object3D & { dispose(): void }) | null = null;

  constructor(private readonly viewport: Viewport) {}

  get shown(): boolean {
    return this.mesh !== null;
  }

  /** Show splats from file bytes (replacing any shown). */
  async show(bytes: Uint8Array, format: "spz" | "ply"): Promise<void> {
    const spark = await loadSpark();
    this.spark ??= new spark.SparkRenderer({ renderer: this.viewport.renderer });
    const fileType = format === "spz" ? spark.SplatFileType.SPZ : spark.SplatFileType.PLY;
    const mesh = new spark.SplatMesh({ fileBytes: bytes, fileType });
    await mesh.initialized;
    this.hide();
    this.mesh = mesh;
    this.viewport.scene.add(this.spark, mesh);
    this.viewport.animate(true);
  }

  /** Remove the splats (Spark's renderer is kept, out of the scene, for next time). */
  hide(): void {
    if (!this.mesh) return;
    this.viewport.scene.remove(this.mesh);
    if (this.spark) this.viewport.scene.remove(this.spark);
    this.mesh.dispose();
    this.mesh = null;
    this.viewport.animate(false);
  }
}
