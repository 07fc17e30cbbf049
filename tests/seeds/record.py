"""Record what tests/seeds/test_seed_examples.py checks the examples against:

    python -m tests.seeds.record     # with the seed documents at hand (shared/seeds)

writes seed_digests.json: each seed file's sha256, and each example's seed and the sha256
of its code, after checking that the code is the seed's text verbatim.
"""

from __future__ import annotations

import json
import sys

from tests.seeds.test_seed_examples import EXAMPLE_FILES, RECORD, SEEDS, example_code, sha256


def main() -> int:
    if SEEDS is None:
        print("error: no shared/seeds found (set GRAPHRUNTIME_SEEDS)", file=sys.stderr)
        return 1
    seeds: dict[str, str] = {}
    examples: dict[str, dict[str, str]] = {}
    for path in EXAMPLE_FILES:
        _, code = example_code(path)
        seed_name = f"{path.stem.rsplit('_', 1)[0]}.txt"
        seed_text = (SEEDS / seed_name).read_text(encoding="utf-8")
        if code not in seed_text:
            print(f"error: {path.name} is not verbatim text of {seed_name}", file=sys.stderr)
            return 1
        seeds[seed_name] = sha256(seed_text)
        examples[path.name] = {"seed": seed_name, "code_sha256": sha256(code)}
    record = {"seeds": dict(sorted(seeds.items())), "examples": dict(sorted(examples.items()))}
    RECORD.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"recorded {len(examples)} examples of {len(seeds)} seeds in {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
