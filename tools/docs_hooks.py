"""MkDocs hooks: the CLI and REST reference pages, generated at build time.

The reference pages hold a marker (`<!-- reference:cli -->`, `<!-- reference:rest -->`) that is
replaced with text made from the real argument parser and the app's OpenAPI schema, so the docs
cannot drift from the code.
"""

from __future__ import annotations

import argparse
import html
import json
import os
from typing import Any

CLI_MARKER = "<!-- reference:cli -->"
REST_MARKER = "<!-- reference:rest -->"
METHODS = ("get", "post", "put", "patch", "delete")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the reference pages' markers (MkDocs calls this for every page)."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if REST_MARKER in markdown:
        markdown = markdown.replace(REST_MARKER, rest_reference())
    return markdown


# ---- the command line ---------------------------------------------------------------------


def cli_reference() -> str:
    """Markdown for every `genservice` command: its purpose and its full `--help`."""
    # argparse wraps help to the terminal; fix the width so the page is the same everywhere.
    os.environ["COLUMNS"] = "100"
    from genservice.cli import build_parser

    parser = build_parser()
    parts = ["```text", parser.format_help().rstrip(), "```", ""]
    for name, sub, help_text in _subcommands(parser):
        parts += _command_section(f"genservice {name}", sub, help_text, level=2)
    return "\n".join(parts)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, Any, str]]:
    """(name, parser, one-line help) of each subcommand, in the order they were added."""
    found: list[tuple[str, Any, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, sub, helps.get(name, "")))
    return found


def _command_section(title: str, parser: Any, help_text: str, level: int) -> list[str]:
    lines = ["#" * level + f" `{title}`", ""]
    if help_text:
        lines += [help_text[0].upper() + help_text[1:] + ".", ""]
    lines += ["```text", parser.format_help().rstrip(), "```", ""]
    for name, sub, sub_help in _subcommands(parser):
        lines += _command_section(f"{title} {name}", sub, sub_help, min(level + 1, 4))
    return lines


# ---- the REST API -------------------------------------------------------------------------


def rest_reference() -> str:
    """Markdown for every route of the app's OpenAPI schema, then its data types."""
    from genservice.api.openapi import openapi_schema

    schema = openapi_schema()
    parts: list[str] = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                parts += _operation(method, path, item[method])
    parts += ["## Data types", ""]
    for name, component in schema.get("components", {}).get("schemas", {}).items():
        parts += _component(name, component)
    return "\n".join(parts)


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    lines = [f"## `{method.upper()} {path}`", ""]
    if op.get("summary"):
        lines += [f"**{op['summary']}**", ""]
    if op.get("description"):
        lines += [op["description"].strip(), ""]
    params = op.get("parameters", [])
    if params:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for p in params:
            lines.append(
                f"| `{p['name']}` | {p.get('in', '')} | {_type(p.get('schema', {}))} "
                f"| {'yes' if p.get('required') else 'no'} | {_cell(p.get('description', ''))} |"
            )
        lines.append("")
    body = op.get("requestBody", {}).get("content", {})
    if body:
        kinds = ", ".join(
            f"`{media}` ({_type(content.get('schema', {}))})" for media, content in body.items()
        )
        lines += [f"Request body: {kinds}.", ""]
    responses = op.get("responses", {})
    if responses:
        lines += ["| status | meaning | body |", "|---|---|---|"]
        for status, response in responses.items():
            content = response.get("content", {})
            shape = ", ".join(_type(c.get("schema", {})) for c in content.values()) or "—"
            lines.append(f"| {status} | {_cell(response.get('description', ''))} | {shape} |")
        lines.append("")
    return lines


def _component(name: str, component: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if component.get("description"):
        lines += [component["description"].strip(), ""]
    properties = component.get("properties", {})
    if "enum" in component:
        lines += ["One of: " + ", ".join(f"`{v}`" for v in component["enum"]) + ".", ""]
    if properties:
        required = set(component.get("required", []))
        lines += ["| field | type | required | description |", "|---|---|---|---|"]
        for field, spec in properties.items():
            lines.append(
                f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} "
                f"| {_cell(spec.get('description', ''))} |"
            )
        lines.append("")
    return lines


def _type(spec: dict[str, Any]) -> str:
    """A short readable type: a link to a data type, or the JSON type with its constraints."""
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in spec:
            kinds = [_type(s) for s in spec[key] if s.get("type") != "null"]
            nullable = any(s.get("type") == "null" for s in spec[key])
            return " or ".join(kinds) + (" (nullable)" if nullable else "")
    kind = spec.get("type", "any")
    if kind == "array":
        return f"array of {_type(spec.get('items', {}))}"
    if kind == "object" and "additionalProperties" in spec:
        extra = spec["additionalProperties"]
        return f"object of {_type(extra)}" if isinstance(extra, dict) else "object"
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    bounds = [
        f"{sign} {spec[key]}"
        for key, sign in (("minimum", "≥"), ("maximum", "≤"), ("maxLength", "length ≤"))
        if key in spec
    ]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return html.escape(" ".join(str(text).split())).replace("|", "\\|")
