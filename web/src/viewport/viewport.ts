/**
 * The three.js view: renderer on <canvas id="viewport"> (white background, drawing buffer kept
 * for screenshots), perspective and orthographic cameras sharing one OrbitControls, lights that
 * follow the camera, grid and axes, the model and a comparison overlay. Renders on demand, or
 * every frame while something animated (splats) asks for it.
 */
import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { fitDistance, gridFor, normalize, orthoFrustum, PRESETS, viewHeight, type Preset } from "./camera";
import { dispose, type LoadedModel } from "./model";

const FOV = 40;

export class Viewport {
  readonly renderer: THREE.WebGLRenderer;
  readonly scene = new THREE.Scene();
  readonly perspective = new THREE.PerspectiveCamera(FOV, 1, 0.001, 100);
  readonly orthographic = new THREE.OrthographicCamera(-1, 1, 1, -1, -100, 100);
  readonly controls: OrbitControls;
  readonly content = new THREE.Group();
  model: LoadedModel | null = null;
  private overlay: THREE.Object3D | null = null;
  private grid: THREE.GridHelper | null = null;
  private axes: THREE.AxesHelper | null = null;
  private showGrid = true;
  private showAxes = false;
  private readonly light = new THREE.DirectionalLight(0xffffff, 2.2);
  private pending = 0;
  private animating = 0;
  /** Called before each frame is drawn (the section plane and measurement hook in here). */
  readonly beforeRender: Array<() => void> = [];

  constructor(readonly canvas: HTMLCanvasElement) {
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    this.renderer.setClearColor(0xffffff, 1);
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.localClippingEnabled = true;
    this.scene.background = new THREE.Color(0xffffff);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x9aa0a8, 1.6));
    this.scene.add(this.light, this.light.target, this.content);
    this.perspective.position.set(0.1, 0.1, 0.1);
    this.orthographic.position.copy(this.perspective.position);
    this.controls = new OrbitControls(this.perspective, canvas);
    this.controls.enableDamping = false;
    this.controls.screenSpacePanning = true;
    this.controls.addEventListener("change", () => this.requestRender());
    new ResizeObserver(() => this.resize()).observe(canvas.parentElement ?? canvas);
    this.resize();
  }

  get camera(): THREE.PerspectiveCamera | THREE.OrthographicCamera {
    return this.controls.object as THREE.PerspectiveCamera | THREE.OrthographicCamera;
  }

  get isOrthographic(): boolean {
    return this.camera === this.orthographic;
  }

  // ---- drawing ------------------------------------------------------------------------------

  /** Draw now (synchronously: the canvas holds the frame when this returns). */
  render(): void {
    this.pending = 0;
    const camera = this.camera;
    this.light.position.copy(camera.position);
    this.light.target.position.copy(this.controls.target);
    for (const hook of this.beforeRender) hook();
    this.renderer.render(this.scene, camera);
  }

  /** Draw at the next animation frame (coalesced). */
  requestRender(): void {
    if (this.pending || this.animating) return;
    this.pending = requestAnimationFrame(() => this.render());
  }

  /** Draw every frame while at least one caller wants it (e.g. splats sorting). */
  animate(on: boolean): void {
    this.animating = Math.max(0, this.animating + (on ? 1 : -1));
    this.renderer.setAnimationLoop(this.animating ? () => this.render() : null);
    if (!this.animating) this.requestRender();
  }

  resize(): void {
    const box = (this.canvas.parentElement ?? this.canvas).getBoundingClientRect();
    const width = Math.max(1, Math.floor(box.width));
    const height = Math.max(1, Math.floor(box.height));
    this.renderer.setSize(width, height, false);
    this.perspective.aspect = width / height;
    this.perspective.updateProjectionMatrix();
    this.updateOrtho(this.orthoHeight());
    this.render();
  }

  private orthoHeight(): number {
    return this.orthographic.top - this.orthographic.bottom;
  }

  private updateOrtho(height: number): void {
    const size = this.renderer.getSize(new THREE.Vector2());
    Object.assign(this.orthographic, orthoFrustum(height, size.x / Math.max(size.y, 1)));
    this.orthographic.updateProjectionMatrix();
  }

  // ---- content ------------------------------------------------------------------------------

  /** Show a model (the previous one is freed); the camera moves only when `fit` is true. */
  setModel(model: LoadedModel | null, fit: boolean): void {
    if (this.model) {
      this.content.remove(this.model.root);
      dispose(this.model.root);
    }
    this.model = model;
    if (model) this.content.add(model.root);
    this.updateHelpers();
    this.updateClipRange();
    if (model && fit) this.fit();
    this.render();
  }

  /** A second model drawn over the first (comparison), or none. */
  setOverlay(object: THREE.Object3D | null): void {
    if (this.overlay) {
      this.content.remove(this.overlay);
      dispose(this.overlay);
    }
    this.overlay = object;
    if (object) this.content.add(object);
    this.requestRender();
  }

  private updateClipRange(): void {
    const sphere = this.model?.sphere;
    const r = sphere ? sphere.radius : 0.05;
    this.perspective.near = r / 200;
    this.perspective.far = r * 400;
    this.perspective.updateProjectionMatrix();
    this.orthographic.near = -r * 200;
    this.orthographic.far = r * 400;
    this.orthographic.updateProjectionMatrix();
  }

  private updateHelpers(): void {
    for (const helper of [this.grid, this.axes]) {
      if (helper) {
        this.scene.remove(helper);
        helper.dispose();
      }
    }
    this.grid = null;
    this.axes = null;
    const sphere = this.model?.sphere ?? new THREE.Sphere(new THREE.Vector3(), 0.05);
    const box = this.model?.box;
    const { cell, cells } = gridFor(sphere.radius);
    this.grid = new THREE.GridHelper(cell * cells, cells, 0xb8bec7, 0xe1e4e8);
    this.grid.position.set(sphere.center.x, box ? box.min.y : 0, sphere.center.z);
    this.grid.visible = this.showGrid;
    this.grid.raycast = () => {};
    this.axes = new THREE.AxesHelper(sphere.radius * 1.3);
    this.axes.visible = this.showAxes;
    this.axes.raycast = () => {};
    this.scene.add(this.grid, this.axes);
  }

  setGrid(on: boolean): void {
    this.showGrid = on;
    if (this.grid) this.grid.visible = on;
    this.requestRender();
  }

  setAxes(on: boolean): void {
    this.showAxes = on;
    if (this.axes) this.axes.visible = on;
    this.requestRender();
  }

  // ---- camera -------------------------------------------------------------------------------

  /** Frame the model, keeping the direction the camera looks from. */
  fit(direction?: THREE.Vector3): void {
    const sphere = this.model?.sphere ?? new THREE.Sphere(new THREE.Vector3(), 0.05);
    const dir = direction ?? this.camera.position.clone().sub(this.controls.target);
    if (dir.lengthSq() < 1e-12) dir.set(...PRESETS.iso);
    dir.normalize();
    const distance = fitDistance(sphere.radius, FOV, this.perspective.aspect);
    this.controls.target.copy(sphere.center);
    for (const camera of [this.perspective, this.orthographic]) {
      camera.position.copy(sphere.center).addScaledVector(dir, distance);
      camera.up.set(0, 1, 0);
      camera.lookAt(sphere.center);
    }
    this.orthographic.zoom = 1;
    this.updateOrtho(viewHeight(distance, FOV));
    this.controls.update();
    this.render();
  }

  /** Look from a preset direction and frame the model. */
  view(preset: Preset): void {
    this.fit(new THREE.Vector3(...normalize(PRESETS[preset])));
  }

  /** Switch between perspective and orthographic, keeping what is seen about the same size. */
  setOrthographic(on: boolean): void {
    if (on === this.isOrthographic) return;
    const from = this.camera;
    const to = on ? this.orthographic : this.perspective;
    const target = this.controls.target;
    const offset = from.position.clone().sub(target);
    if (on) {
      this.orthographic.zoom = 1;
      this.updateOrtho(viewHeight(offset.length(), FOV));
      to.position.copy(from.position);
    } else {
      const height = this.orthoHeight() / this.orthographic.zoom;
      const distance = height / (2 * Math.tan((FOV * Math.PI) / 360));
      to.position.copy(target).addScaledVector(offset.normalize(), distance);
    }
    to.quaternion.copy(from.quaternion);
    to.up.copy(from.up);
    this.controls.object = to;
    this.controls.update();
    this.render();
  }

  /** The first visible, unclipped model surface under a canvas point (client coordinates). */
  pick(clientX: number, clientY: number, accept: (p: THREE.Vector3) => boolean): THREE.Vector3 | null {
    if (!this.model) return null;
    const rect = this.canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2(
      ((clientX - rect.left) / rect.width) * 2 - 1,
      -((clientY - rect.top) / rect.height) * 2 + 1,
    );
    const raycaster = new THREE.Raycaster();
    raycaster.setFromCamera(ndc, this.camera);
    for (const hit of raycaster.intersectObject(this.model.root, true)) {
      if (!isVisible(hit.object)) continue;
      if (accept(hit.point)) return hit.point.clone();
    }
    return null;
  }
}

function isVisible(object: THREE.Object3D): boolean {
  for (let o: THREE.Object3D | null = object; o; o = o.parent) if (!o.visible) return false;
  return true;
}
