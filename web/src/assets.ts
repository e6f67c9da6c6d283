/**
 * Fetching a version's files with the API key: a small cache of bytes by version and format
 * (undo/redo and comparisons re-use them), and downloads saved under `<version id>.<ext>`.
 */
import type { Api, AssetFormat } from "./api/client";
import type { Version } from "./api/types";
import { downloadName } from "./lib/format";

const CACHE_LIMIT = 24;
const cache = new Map<string, Promise<ArrayBuffer>>();

/** The asset id to ask for: the version's own file of that format, else any of its files. */
export function assetIdFor(version: Version, format: AssetFormat): string | null {
  const own = version.assets.find((a) => a.format === format);
  return (own ?? version.assets.find((a) => a.format === "glb") ?? version.assets[0])?.id ?? null;
}

/** A version's file as bytes (other formats are made on demand by the service). */
export function assetBytes(api: Api, version: Version, format: AssetFormat): Promise<ArrayBuffer> {
  const key = `${version.id}:${format}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const id = assetIdFor(version, format);
  if (!id) return Promise.reject(new Error(`version ${version.number} has no files`));
  const bytes = api.asset(id, format).then((blob) => blob.arrayBuffer());
  cache.set(key, bytes);
  bytes.catch(() => cache.delete(key));
  while (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  return bytes;
}

const previews = new Map<string, Promise<string>>();

/** An object URL of a version's preview picture (its `png` asset), or null when it has none. */
export function previewUrl(api: Api, version: Version): Promise<string> | null {
  if (!version.assets.some((a) => a.format === "png")) return null;
  let url = previews.get(version.id);
  if (!url) {
    url = assetBytes(api, version, "png").then((bytes) =>
      URL.createObjectURL(new Blob([bytes], { type: "image/png" })),
    );
    previews.set(version.id, url);
    url.catch(() => previews.delete(version.id));
  }
  return url;
}

/** Download a version's file through the browser, named `<version id>.<ext>`. */
export async function download(api: Api, version: Version, format: AssetFormat): Promise<string> {
  const id = assetIdFor(version, format);
  if (!id) throw new Error(`version ${version.number} has no files`);
  const blob = await api.asset(id, format);
  const name = downloadName(version.id, format);
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.style.display = "none";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
  return name;
}
