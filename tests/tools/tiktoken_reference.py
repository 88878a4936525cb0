#!/usr/bin/env python3
"""Print Python tiktoken's reference token counts for strata's fixture set.

The output is the body of the REFERENCE table in tests/tokens_reference.rs:
one `("name", o200k_base, cl100k_base),` line per fixture, counted with
`len(encoding.encode_ordinary(text))`.

How to run (from the repository root):

    python3 -m venv /tmp/tk && /tmp/tk/bin/pip install tiktoken
    /tmp/tk/bin/python tests/tools/tiktoken_reference.py          # the table
    /tmp/tk/bin/python tests/tools/tiktoken_reference.py --bench  # timings

--bench prints each encoding's first load (CPU time of the process) and the
best and median of 10 counts of 1 MB of mixed text.

tiktoken normally downloads its BPE files. When TIKTOKEN_CACHE_DIR is not
set, this script builds a cache directory itself from the identical files
shipped, gzipped, inside the bpe-openai crate source strata counts with
(found under ~/.cargo/registry/src/*/bpe-openai-*/data/, or given with
--assets DIR): tiktoken looks a file up as sha1(official URL) in that
directory (see tiktoken/load.py), the URLs are the ones in
tiktoken_ext/openai_public.py, and tiktoken checks each file's SHA-256.

Fixtures (read byte for byte, shared with the Rust test):
  tests/fixtures/tokens/cases.json   small named strings (whitespace runs, emoji, CJK, ...)
  tests/fixtures/tokens/*.txt        longer texts (english, rust, python, cjk, emoji, whitespace)
  mixed_100k                         mixed_text(100_000), generated as described in
                                     tests/common/mixed_text.rs (same rule here).
"""

import argparse
import glob
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "tokens")
ENCODINGS = ("o200k_base", "cl100k_base")
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
TEXT_FILES = ("english", "rust", "python", "cjk", "emoji", "whitespace")


def read(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read().decode("utf-8")


def mixed_text(target_bytes):
    """Blocks "[i] " + paragraph, i = 0, 1, ..., until at least target_bytes."""
    paragraph = read("mixed_paragraph.txt")
    parts, size, i = [], 0, 0
    while size < target_bytes:
        block = f"[{i}] {paragraph}"
        parts.append(block)
        size += len(block.encode("utf-8"))
        i += 1
    return "".join(parts)


def prepare_cache(assets):
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    if assets is None:
        found = sorted(glob.glob(os.path.expanduser(
            "~/.cargo/registry/src/*/bpe-openai-*/data")))
        if not found:
            sys.exit("no bpe-openai data found (run cargo fetch); pass --assets DIR or set TIKTOKEN_CACHE_DIR")
        assets = found[-1]
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    for enc in ENCODINGS:
        key = hashlib.sha1(URL.format(enc).encode()).hexdigest()
        with gzip.open(os.path.join(assets, f"{enc}.tiktoken.gz"), "rb") as src, \
                open(os.path.join(cache, key), "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache


def fixtures():
    with open(os.path.join(FIXTURES, "cases.json"), "rb") as f:
        for case in json.loads(f.read().decode("utf-8")):
            yield case["name"], case["text"]
    for name in TEXT_FILES:
        yield f"file_{name}", read(f"{name}.txt")
    yield "mixed_100k", mixed_text(100_000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", help="directory of ENCODING.tiktoken.gz files (bpe-openai's data/)")
    parser.add_argument("--bench", action="store_true", help="time 1 MB of mixed text")
    args = parser.parse_args()
    prepare_cache(args.assets)
    import tiktoken

    loads = []
    for name in ENCODINGS:
        start = time.process_time()
        loads.append((tiktoken.get_encoding(name), time.process_time() - start))
    encs = [enc for enc, _ in loads]
    if args.bench:
        for enc, seconds in loads:
            print(f"{enc.name}: first load {seconds * 1e3:.0f} ms of CPU (reading and parsing the file)")
        text = mixed_text(1_000_000)
        mb = len(text.encode("utf-8")) / 1e6
        for enc in encs:
            enc.encode_ordinary("warm up")
            runs = sorted(_timed(enc, text) for _ in range(10))
            best, median = runs[0], (runs[4] + runs[5]) / 2
            print(f"{enc.name}: {mb:.2f} MB, best {best:.3f} s ({mb / best:.1f} MB/s), "
                  f"median {median:.3f} s ({mb / median:.1f} MB/s)")
        return
    print(f"// Python tiktoken {tiktoken.__version__}, encode_ordinary")
    for name, text in fixtures():
        counts = ", ".join(str(len(e.encode_ordinary(text))) for e in encs)
        print(f'    ("{name}", {counts}),')


def _timed(enc, text):
    start = time.perf_counter()
    enc.encode_ordinary(text)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
