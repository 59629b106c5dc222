"""python -m tinyattn.exercises list | start NAME [DIR] | check NAME [FILE] | hint NAME [DIR]

    list                    the exercises: name, tour chapter, what it asks for
    start NAME [DIR]        write NAME's starting file into DIR (default ./exercises/)
    check NAME [FILE]       grade FILE (default ./exercises/NAME.py); when every check passes,
                            plug it into the library and run the matching demo (--quick)
        --reference         grade the library's own solution instead (it must pass)
        --skeleton          grade the untouched starting file (it must fail)
        --no-demo           grade only; skip the demo
    hint NAME [DIR]         the next hint (DIR/.hints.json counts them), one more each call

`check` exits 0 when every check passes (and the demo reaches its target), 1 otherwise.
"""
import argparse
import sys

from . import EXERCISES, check, get, hint, lines, start


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tinyattn.exercises", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the exercises, in the tour's order")
    s = sub.add_parser("start", help="write an exercise's starting file")
    s.add_argument("name", choices=EXERCISES)
    s.add_argument("dir", nargs="?", default="exercises")
    c = sub.add_parser("check", help="grade an exercise, then run its demo on it")
    c.add_argument("name", choices=EXERCISES)
    c.add_argument("file", nargs="?", default=None)
    which = c.add_mutually_exclusive_group()
    which.add_argument("--reference", action="store_true",
                       help="grade the library's own solution (it must pass)")
    which.add_argument("--skeleton", action="store_true",
                       help="grade the untouched starting file (it must fail)")
    c.add_argument("--no-demo", action="store_true", help="skip the demo")
    c.add_argument("--demo-out", default=None, help="where the demo writes (default: a temporary "
                                                     "directory)")
    h = sub.add_parser("hint", help="the next hint")
    h.add_argument("name", choices=EXERCISES)
    h.add_argument("dir", nargs="?", default="exercises")
    args = p.parse_args(argv)

    if args.command == "list":
        print("\n".join(lines()))
    elif args.command == "start":
        start(args.name, args.dir)
    elif args.command == "hint":
        print(hint(args.name, args.dir))
    else:
        get(args.name)
        ok = check(args.name, args.file, reference=args.reference, skeleton=args.skeleton,
                   demo=not args.no_demo, demo_dir=args.demo_out)
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
