"""Command line of tools.lecture: ``python -m tools.lecture {metadata,slides} ...`` (see __init__)."""

import argparse
import sys
from pathlib import Path

from tools.lecture import build, write_slide_metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.lecture", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    metadata = commands.add_parser("metadata", help="set the slide type of every cell (idempotent)")
    metadata.add_argument("notebooks", nargs="+", type=Path)
    slides = commands.add_parser("slides", help="build reveal.js slides and an index, for showing offline")
    slides.add_argument("notebooks", nargs="+", type=Path)
    slides.add_argument("--out", type=Path, required=True, help="output folder, e.g. build/slides")
    slides.add_argument("--assets", type=Path, required=True,
                        help="where tools/lecture/requirements-assets.txt was installed (pip --target)")
    slides.add_argument("--handout", choices=["solved", "student", "none"], default="solved",
                        help="the whole chapter beside each deck: solved (lecturers), student (no solutions), none")
    args = parser.parse_args(argv)
    if args.command == "metadata":
        changed = write_slide_metadata(args.notebooks)
        print(f"slide metadata: {len(changed)} of {len(args.notebooks)} notebooks changed")
        for path in changed:
            print(f"  {path}")
        return 0
    try:
        written = build(args.notebooks, args.out, args.assets, handout=args.handout)
    except (FileNotFoundError, RuntimeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{args.command}: {len(written) - 1} pages and index.html in {args.out}/ (open {written[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
