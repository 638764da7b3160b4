"""Command line of tools.book: ``python -m tools.book --assets build/vendor --out build/book [--solved]``."""

import argparse
import sys
import time
from pathlib import Path

from tools.book import EDITIONS, build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.book", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="output folder, e.g. build/book")
    parser.add_argument("--assets", type=Path, required=True,
                        help="where tools/lecture/requirements-assets.txt was installed (pip --target)")
    parser.add_argument("--language", action="append", choices=list(EDITIONS),
                        help="build only this language (again for several; default: all)")
    parser.add_argument("--solved", action="store_true",
                        help="the instructor edition (notebooks/, zh-CN/notebooks/) instead of the reader edition")
    parser.add_argument("--student", action="store_true",
                        help="the reader edition without its collapsed solutions, for a course that grades them")
    args = parser.parse_args(argv)
    if args.solved and args.student:
        parser.error("--solved and --student exclude each other")
    start = time.monotonic()
    try:
        homes = build(args.out, args.assets, args.language, solved=args.solved, student_build=args.student)
    except (FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"book: {', '.join(str(home) for home in homes)} in {time.monotonic() - start:.0f} s"
          f" (open {args.out / 'index.html'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
