/**
 * Distance measurement: while on, two clicks on the model (not drags, which orbit) mark two
 * points and show the distance between them in millimetres; a third click starts again.
 */
import * as THREE from "three";
import type { Section } from "./section";
import type { Viewport } from "./viewport";

export class Measure {
  active = false;
  private points: THREE.Vector3[] = [];
  private readonly group = new THREE.Group();
  private down: { x: number; y: number } | null = null;

  constructor(
    private readonly viewport: Viewport,
    private readonly section: Section,
    private readonly onText: (text: string) => void,
  ) {
    this.group.name = "measurement";
    this.group.renderOrder = 10;
    viewport.scene.add(this.group);
    const canvas = viewport.canvas;
    canvas.addEventListener("pointerdown", (e) => {
      this.down = { x: e.clientX, y: e.clientY };
    });
    canvas.addEventListener("pointerup", (e) => {
      const down = this.down;
      this.down = null;
      if (!this.active || !down || e.button !== 0) return;
      if (Math.hypot(e.clientX - down.x, e.clientY - down.y) > 4) return; // a drag: orbiting
      this.click(e.clientX, e.clientY);
    });
  }

  setActive(on: boolean): void {
    this.active = on;
    this.viewport.canvas.style.cursor = on ? "crosshair" : "";
    this.clear();
    this.onText(on ? "Measure: click two points on the model" : "");
  }

  /** Forget the points (a new model, or measuring turned off). */
  clear(): void {
    this.points = [];
    for (const child of [...this.group.children]) {
      this.group.remove(child);
      const mesh = child as THREE.Mesh;
      mesh.geometry?.dispose();
      (mesh.material as THREE.Material | undefined)?.dispose();
    }
    this.viewport.requestRender();
  }

  private click(x: number, y: number): void {
    const point = this.viewport.pick(x, y, (p) => this.section.keeps(p));
    if (!point) {
      this.onText("Measure: no surface there — click on the model");
      return;
    }
    if (this.points.length >= 2) this.clear();
    this.points.push(point);
    this.addMarker(point);
    if (this.points.length === 2) {
      const [a, b] = this.points;
      this.addLine(a, b);
      const mm = a.distanceTo(b) * 1000;
      this.onText(`Distance: ${mm.toFixed(2)} mm`);
    } else {
      this.onText("Measure: click a second point");
    }
    this.viewport.requestRender();
  }

  private addMarker(point: THREE.Vector3): void {
    const radius = (this.viewport.model?.sphere.radius ?? 0.05) * 0.015;
    const marker = new THREE.Mesh(
      new THREE.SphereGeometry(radius, 12, 8),
      new THREE.MeshBasicMaterial({ color: 0xd9304f, depthTest: false }),
    );
    marker.position.copy(point);
    marker.renderOrder = 10;
    this.group.add(marker);
  }

  private addLine(a: THREE.Vector3, b: THREE.Vector3): void {
    const line = new THREE.Line(
      new THREE.BufferGeometry().setFromPoints([a, b]),
      new THREE.LineBasicMaterial({ color: 0xd9304f, depthTest: false }),
    );
    line.renderOrder = 10;
    this.group.add(line);
  }
}
