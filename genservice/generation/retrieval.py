"""Retrieval of solved examples: the nearest solved task of the same domain goes into the prompt.

A small model adapts a worked program far more reliably than it writes one from memory: given a
similar request and its program, it has to copy the structure and change names and numbers. A
model trained this way carries its example index in `<model>/retrieval/` (train-split tasks
only: request, program, domain, family) and every prompt built for it (serving, evaluation, RL)
gets the nearest example; edits, which already carry a program, get none.

Similarity is TF-IDF over the words and numbers of the request (unigrams and bigrams, cosine).
The requests come from a closed vocabulary of part, scene and function words, so lexical
similarity finds the same family and variant; it needs no embedding model, loads in a second
and is exactly reproducible.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genservice.generation.prompts import build_messages

INDEX_DIR = "retrieval"
EXAMPLES_FILE = "examples.jsonl.gz"
META_FILE = "index.json"
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class SolvedExample:
    """One indexed task: its id, domain, family, request and reference program."""

    id: str
    domain: str
    family: str
    prompt: str
    program: str

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {
            "id": self.id,
            "domain": self.domain,
            "family": self.family,
            "prompt": self.prompt,
            "program": self.program,
        }


def features(text: str) -> Counter[str]:
    """Word and number unigrams and bigrams of a request, lower-cased."""
    words = _WORD.findall(text.lower())
    counts: Counter[str] = Counter(words)
    counts.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    return counts


class ExampleIndex:
    """Solved examples and a TF-IDF matrix over their requests; `nearest` finds the closest."""

    def __init__(self, examples: list[SolvedExample], max_seq_len: int | None = None) -> None:
        import numpy as np
        from scipy import sparse

        if not examples:
            raise ValueError("an example index needs at least one example")
        self.examples = examples
        self.max_seq_len = max_seq_len
        counted = [features(e.prompt) for e in examples]
        document_frequency: Counter[str] = Counter()
        for counts in counted:
            document_frequency.update(counts.keys())
        self._column = {word: i for i, word in enumerate(sorted(document_frequency))}
        total = len(examples)
        self._idf = np.array(
            [math.log((1 + total) / (1 + document_frequency[w])) + 1 for w in self._column],
            dtype=np.float32,
        )
        self._matrix = sparse.vstack([self._vector(c) for c in counted]).tocsr()
        self._domain = np.array([e.domain for e in examples])
        self._position = {e.id: i for i, e in enumerate(examples)}

    def _vector(self, counts: Counter[str]) -> Any:
        """L2-normalised sublinear TF-IDF row (words the index never saw are ignored)."""
        import numpy as np
        from scipy import sparse

        columns = [self._column[w] for w in counts if w in self._column]
        values = np.array(
            [(1 + math.log(counts[w])) for w in counts if w in self._column], dtype=np.float32
        )
        values *= self._idf[columns] if columns else 1.0
        norm = float(np.linalg.norm(values)) or 1.0
        return sparse.csr_matrix(
            (values / norm, ([0] * len(columns), columns)), shape=(1, len(self._column))
        )

    def __len__(self) -> int:
        return len(self.examples)

    def nearest(
        self, domain: str, prompt: str, exclude: Iterable[str] = ()
    ) -> SolvedExample | None:
        """The example of `domain` whose request is most like `prompt` (None: no word shared)."""
        return self.nearest_many([(domain, prompt, tuple(exclude))])[0]

    def nearest_many(
        self, queries: Sequence[tuple[str, str, tuple[str, ...]]]
    ) -> list[SolvedExample | None]:
        """`nearest` for many (domain, prompt, excluded ids) queries at once."""
        import numpy as np
        from scipy import sparse

        found: list[SolvedExample | None] = []
        for start in range(0, len(queries), 512):
            chunk = queries[start : start + 512]
            rows = sparse.vstack([self._vector(features(prompt)) for _, prompt, _ in chunk])
            scores = (rows @ self._matrix.T).toarray()
            for row, (domain, _, exclude) in zip(scores, chunk, strict=True):
                row[self._domain != domain] = -np.inf
                for excluded in exclude:
                    if excluded in self._position:
                        row[self._position[excluded]] = -np.inf
                best = int(np.argmax(row))  # the first of equals: deterministic
                # No word in common (or no example of the domain): better no example than a
                # random one.
                found.append(self.examples[best] if row[best] > 0 else None)
        return found

    def save(self, model_dir: Path | str) -> Path:
        """Write the index into `<model_dir>/retrieval/`; return that folder."""
        folder = Path(model_dir) / INDEX_DIR
        folder.mkdir(parents=True, exist_ok=True)
        # mtime 0: the same examples give byte-identical files.
        with (
            (folder / EXAMPLES_FILE).open("wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out,
        ):
            for example in self.examples:
                out.write((json.dumps(example.to_dict(), sort_keys=True) + "\n").encode())
        meta = {
            "examples": len(self.examples),
            "by_domain": dict(sorted(Counter(e.domain for e in self.examples).items())),
            "families": len({e.family for e in self.examples}),
            "max_seq_len": self.max_seq_len,
            "similarity": "tf-idf cosine over request word/number unigrams and bigrams",
        }
        (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        return folder

    @classmethod
    def load(cls, model_dir: Path | str) -> ExampleIndex | None:
        """The index saved in a model directory, or None when the model has none."""
        folder = Path(model_dir) / INDEX_DIR
        if not (folder / EXAMPLES_FILE).is_file():
            return None
        meta_file = folder / META_FILE
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        with gzip.open(folder / EXAMPLES_FILE, "rt", encoding="utf-8") as lines:
            examples = [SolvedExample(**json.loads(line)) for line in lines if line.strip()]
        return cls(examples, meta.get("max_seq_len"))

    @classmethod
    def from_tasks(
        cls, rows: list[dict], per_family: int, seed: int, max_seq_len: int | None = None
    ) -> ExampleIndex:
        """An index of up to `per_family` tasks per family (a seeded draw), edits left out."""
        by_family: dict[str, list[dict]] = {}
        for row in rows:
            if row.get("previous_program") is not None or not isinstance(row.get("id"), str):
                continue
            by_family.setdefault(str(row.get("family", row["domain"])), []).append(row)
        rng = random.Random(seed)
        chosen: list[SolvedExample] = []
        for family in sorted(by_family):
            members = sorted(by_family[family], key=lambda r: r["id"])
            rng.shuffle(members)
            chosen += [
                SolvedExample(r["id"], r["domain"], family, r["prompt"], r["reference"])
                for r in members[:per_family]
            ]
        return cls(chosen, max_seq_len)


def request_messages(
    tokenizer: Any,
    index: ExampleIndex | None,
    domain: str,
    prompt: str,
    previous_program: str | None = None,
    instruction: str | None = None,
    images: int = 0,
    exclude: Iterable[str] = (),
    example: SolvedExample | None = None,
    look_alike: str | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for a request, with the nearest solved example when the model has an index
    (none when a picture's `look_alike` program is shown instead).

    The example is left out for edits (they carry their program) and when it does not fit: the
    prompt with it, plus a reply as long as its program, must stay within the index's
    max_seq_len. Training and serving apply this same rule. `example` skips the look-up.
    """
    if look_alike is not None and previous_program is None:
        return build_messages(domain, prompt, images=images, look_alike=look_alike)
    plain = build_messages(domain, prompt, previous_program, instruction, images)
    if index is None or previous_program is not None:
        return plain
    if example is None:
        example = index.nearest(domain, prompt, exclude)
    if example is None:
        return plain
    shown = (example.prompt, example.program)
    messages = build_messages(domain, prompt, images=images, example=shown)
    if index.max_seq_len is not None:
        text_only = build_messages(domain, prompt, example=shown)
        rendered = tokenizer.apply_chat_template(
            text_only, tokenize=False, add_generation_prompt=True
        )
        length = len(tokenizer.encode(rendered, add_special_tokens=False))
        length += len(tokenizer.encode(example.program, add_special_tokens=False))
        if length > index.max_seq_len:
            return plain
    return messages
