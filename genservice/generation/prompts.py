"""The prompt format shared by training (SFT, RL) and serving: chat messages per domain.

Every model sees the same messages: a system message per domain saying what to write, then the
request; for an edit, the previous program and the instruction. A model trained with retrieval
also sees a solved example (a similar request and its program) before the request, and a model
trained with look-alikes sees, with a picture, the program of the gallery's part that looks most
like it (gallery.py) before the request. The
assistant's reply is the program alone (no prose, no code fences), which is what validators run.

A repair (`build_repair_messages`) shows the request, the program that failed and the
validator's error (Report.error: kind, message, line), and asks for the fixed program. Training
rows carry it as `repair: true`, `failed_program` and `error: {kind, message, line}`
(training/corpus/repair.py); serving builds the same messages from a failed candidate's Report.
"""

from __future__ import annotations

from typing import Any

DOMAINS = ("cad", "scene", "code")
SYSTEM = {
    "cad": "Write a CadQuery Python script for the part described. Units are millimetres. Put "
    "every dimension in a named top-level parameter and assign the final shape to `result`. "
    "Reply with the script only.",
    "scene": "Write a CadQuery Python script for the scene described: a cq.Assembly of named "
    "parts resting on the ground (z = 0), in millimetres, with named top-level parameters, "
    "assigned to `result`. Reply with the script only.",
    "code": "Write the Python function described. Reply with the code only.",
}


def build_messages(
    domain: str,
    prompt: str,
    previous_program: str | None = None,
    instruction: str | None = None,
    images: int = 0,
    example: tuple[str, str] | None = None,
    look_alike: str | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for a request (with `images` image placeholders for a VLM).

    `example` is a solved (request, program) pair shown before the request (see retrieval.py);
    `look_alike` the program of a part that looks like the request's picture (gallery.py).
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if (previous_program is None) != (instruction is None):
        raise ValueError("an edit needs both the previous program and an instruction")
    text = prompt.strip()
    if look_alike is not None:
        if not images or previous_program is not None or example is not None:
            raise ValueError("a look-alike goes only with a new request's picture")
        text = f"A part that looks like the picture:\n{look_alike.strip()}\n\nRequest: {text}"
    if example is not None:
        if previous_program is not None:
            raise ValueError("an edit carries its own program; it takes no example")
        text = (
            f"Example request: {example[0].strip()}\nExample program:\n"
            f"{example[1].strip()}\n\nRequest: {text}"
        )
    if previous_program is not None:
        text = (
            f"{text}\n\nCurrent program:\n{previous_program.strip()}\n\n"
            f"Change: {str(instruction).strip()}"
        )
    user: dict[str, Any] = {"role": "user", "content": text}
    if images:
        user["content"] = [{"type": "image"} for _ in range(images)] + [
            {"type": "text", "text": text}
        ]
    return [{"role": "system", "content": SYSTEM[domain]}, user]


MAX_ERROR_CHARS = 600  # a longer error message is cut (its start says what went wrong)


def build_repair_messages(
    domain: str,
    prompt: str,
    program: str,
    error_kind: str,
    error_message: str,
    error_line: int | None = None,
    images: int = 0,
) -> list[dict[str, Any]]:
    """Chat messages asking to fix a program that failed: the request, the failed program and
    the validator's error (kind, message, line: Report.error), with `images` placeholders.

    The user message reads (the line part only when the error has a line)::

        {request}

        Failed program:
        {program}

        Error: {kind} at line {line}: {message}

        Fix the program.
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if not program.strip():
        raise ValueError("a repair needs the program that failed")
    message = " ".join(str(error_message).split())
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    where = f" at line {error_line}" if error_line is not None else ""
    text = (
        f"{prompt.strip()}\n\nFailed program:\n{program.strip()}\n\n"
        f"Error: {error_kind}{where}: {message}\n\nFix the program."
    )
    user: dict[str, Any] = {"role": "user", "content": text}
    if images:
        user["content"] = [{"type": "image"} for _ in range(images)] + [
            {"type": "text", "text": text}
        ]
    return [{"role": "system", "content": SYSTEM[domain]}, user]


def repair_messages_of(row: dict[str, Any], images: int = 0) -> list[dict[str, Any]]:
    """The repair messages of a task row with `repair: true` (failed_program and error)."""
    error = row.get("error") or {}
    return build_repair_messages(
        row["domain"],
        row["prompt"],
        row["failed_program"],
        str(error.get("kind") or "error"),
        str(error.get("message") or ""),
        error.get("line"),
        images,
    )


def clean_completion(text: str) -> str:
    """The program from a model's reply: code fences and surrounding whitespace removed."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    return body.strip() + "\n"
