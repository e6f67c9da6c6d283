/**
 * The section plane: a clipping plane across the model along X, Y or Z, placed by a fraction of
 * the model's extent (the "Section position" slider). Clipped models show their back faces so
 * the cut reads as a solid.
 */
import * as THREE from "three";
import { materialsOf } from "./model";
import type { Viewport } from "./viewport";

export type Axis = "x" | "y" | "z";

const NORMALS: Record<Axis, THREE.Vector3> = {
  x: new THREE.Vector3(-1, 0, 0),
  y: new THREE.Vector3(0, -1, 0),
  z: new THREE.Vector3(0, 0, -1),
};

export class Section {
  enabled = false;
  axis: Axis = "x";
  /** 0 = the model's low end along the axis, 1 = its high end. */
  fraction = 0.5;
  readonly plane = new THREE.Plane(NORMALS.x.clone(), 0);
  private applied = "";

  constructor(private readonly viewport: Viewport) {
    viewport.beforeRender.push(() => this.apply());
  }

  set(changes: Partial<Pick<Section, "enabled" | "axis" | "fraction">>): void {
    Object.assign(this, changes);
    this.viewport.requestRender();
  }

  /** Is a point on the kept side (always, while the section is off)? */
  keeps(point: THREE.Vector3): boolean {
    return !this.enabled || this.plane.distanceToPoint(point) >= -1e-9;
  }

  private apply(): void {
    const box = this.viewport.model?.box;
    if (box) {
      const i = { x: 0, y: 1, z: 2 }[this.axis];
      const lo = box.min.getComponent(i);
      const hi = box.max.getComponent(i);
      // keep what lies below the cut: normal points to -axis, constant = cut position
      this.plane.normal.copy(NORMALS[this.axis]);
      this.plane.constant = lo + (hi - lo) * this.fraction;
    }
    const materials = materialsOf(this.viewport.content);
    const key = `${this.enabled}|${materials.length}|${this.viewport.content.children.map((c) => c.uuid).join()}`;
    if (key === this.applied) return;
    this.applied = key;
    for (const material of materials) {
      material.clippingPlanes = this.enabled ? [this.plane] : [];
      if (!material.transparent) material.side = this.enabled ? THREE.DoubleSide : THREE.FrontSide;
      material.needsUpdate = true;
    }
  }
}
