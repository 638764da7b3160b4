"""Time greedy generation with and without the KV cache: chapter 09's decoder, tokens per second.

The decoder is ``mha_chapters.generation.TinyDecoder`` with random weights (seed 0; 256 token ids,
64 hiddens, 4 heads, 2 layers, float64), a prompt of 8 tokens, batch 1, one CPU thread. For every number of
new tokens, the two ways are timed as interleaved pairs in this process; the speed-up of a pair is its time
without the cache over its time with it. Both ways must produce the same tokens, and the script checks that
first. The result is one JSON object on stdout (or in --output) with its provenance: the machine, the torch
version, the date and the command.

    python benchmarks/bench_generation.py [--lengths 32 64 128 256] [--pairs 7] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys

import torch

from mha_chapters.bench.timing import machine_summary
from mha_chapters.generation import TinyDecoder, generate_tokens, time_generation
from mha_lib import set_seed

SIZES = {"vocab_size": 256, "num_hiddens": 64, "num_heads": 4, "num_layers": 2, "max_len": 512}
PROMPT_LEN = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256], help="new tokens per run")
    parser.add_argument("--pairs", type=int, default=7, help="interleaved pairs per length (at least 7)")
    parser.add_argument("--output", help="write the JSON here instead of stdout")
    args = parser.parse_args()
    if args.pairs < 7:
        parser.error(f"--pairs must be at least 7, got {args.pairs}")
    if max(args.lengths) + PROMPT_LEN > SIZES["max_len"]:
        parser.error(f"--lengths must stay at or below {SIZES['max_len'] - PROMPT_LEN}")
    set_seed(0)
    model = TinyDecoder(**SIZES).double().eval()
    prompt = torch.randint(0, SIZES["vocab_size"], (1, PROMPT_LEN))
    longest = max(args.lengths)
    if not torch.equal(generate_tokens(model, prompt, longest), generate_tokens(model, prompt, longest,
                                                                                use_cache=False)):
        raise SystemExit("error: generation with and without the cache gave different tokens")
    results = time_generation(model, prompt, args.lengths, repeats=args.pairs, num_threads=1)
    record = {
        "benchmark": "greedy generation with and without the KV cache (chapter 09)",
        "machine_summary": machine_summary(1),
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", *sys.argv]),
        "model": SIZES | {"dtype": "float64", "prompt_len": PROMPT_LEN, "batch_size": 1, "seed": 0},
        "tokens_per_second": {str(n): {name: [round(v, 1) for v in values] for name, values in numbers.items()
                                       if name != "speed-up"} for n, numbers in results.items()},
        "speed_up": {str(n): {"min": round(min(r["speed-up"]), 2), "median": round(statistics.median(r["speed-up"]), 2),
                              "max": round(max(r["speed-up"]), 2)} for n, r in results.items()},
    }
    text = json.dumps(record, indent=1)
    if args.output:
        with open(args.output, "w") as file:
            file.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
