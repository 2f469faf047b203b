#!/usr/bin/env python3
"""Builds the guide and checks its links (ctest docs_book, docs_links).

    check_book.py build --mdbook MDBOOK --book docs --out DIR
        mdbook build, failing on any warning or error mdbook prints (mdbook
        itself only fails on errors).
    check_book.py links --book docs --out DIR --readme README.md
        every link between the guide's pages, and from README.md into docs/,
        reaches an existing page and, with #anchor, an existing heading id of
        the built HTML; README.md's links to files of the repository exist.
"""
import argparse
import html.parser
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote


def build(opts):
    run = subprocess.run([opts.mdbook, "build", str(opts.book), "--dest-dir", str(opts.out)],
                         capture_output=True, text=True)
    output = run.stdout + run.stderr
    print(output)
    problems = [line for line in output.splitlines() if re.search(r"\b(WARN|ERROR)\b", line)]
    if run.returncode != 0 or problems:
        print(f"mdbook failed ({run.returncode}) or warned:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    return 0


# mdbook's own pages: print.html repeats every page (its links rewritten), the
# others are generated. Links to them count; links in them are not checked.
MDBOOK_PAGES = ("print.html", "404.html", "toc.html")


class Page(html.parser.HTMLParser):
    """The ids and the links of one built page."""

    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def pages(out):
    parsed = {}
    for path in out.rglob("*.html"):
        rel = path.relative_to(out).as_posix()
        page = Page()
        page.feed(path.read_text())
        parsed[rel] = page
    return parsed


def resolve(parsed, base, target, where, errors):
    """Checks one link `target` found in `where`, relative to page `base`."""
    if re.match(r"^[a-z]+:", target) or target.startswith("//"):
        return  # external (http:, mailto:): not checked offline
    path, _, anchor = target.partition("#")
    if path:
        joined = (Path(base).parent / unquote(path)).as_posix()
        parts = []
        for part in joined.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        page = "/".join(parts)
    else:
        page = base
    if page.endswith("/") or page == "":
        page += "index.html"
    if page not in parsed:
        errors.append(f"{where}: link {target!r}: no page {page}")
    elif anchor and unquote(anchor) not in parsed[page].ids:
        errors.append(f"{where}: link {target!r}: no heading #{anchor} in {page}")


def links(opts):
    parsed = pages(opts.out)
    if not parsed:
        print(f"no built pages in {opts.out}", file=sys.stderr)
        return 1
    errors = []
    for name, page in sorted(parsed.items()):
        if name in MDBOOK_PAGES:
            continue
        for target in page.links:
            resolve(parsed, name, target, name, errors)
    # Links of the sources that the HTML cannot show: .md links mdbook could not
    # map (it rewrites page.md to page.html only for pages of the book).
    src = opts.book / "src"
    for md in sorted(src.rglob("*.md")):
        rel = md.relative_to(src).as_posix()
        for target in re.findall(r"\]\(([^)\s]+)\)", md.read_text()):
            if not re.match(r"^[a-z]+:", target) and target.split("#")[0].endswith(".md"):
                html_target = re.sub(r"\.md(#|$)", r".html\1", target)
                resolve(parsed, rel.replace(".md", ".html"), html_target, f"docs/src/{rel}", errors)
    readme = opts.readme.read_text()
    root = opts.readme.parent
    for target in re.findall(r"\]\(([^)\s]+)\)", readme):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        if path.startswith("docs/src/") and path.endswith(".md"):
            page = path[len("docs/src/"):-3] + ".html"
            resolve(parsed, "index.html", page + ("#" + anchor if anchor else ""), "README.md", errors)
        elif path and not (root / path).exists():
            errors.append(f"README.md: link {target!r}: no file {path}")
        elif not path and anchor:
            errors.append(f"README.md: link {target!r}: anchors within README are not checked; link the guide")
    for error in errors:
        print(error, file=sys.stderr)
    print(f"{len(parsed)} pages checked, {len(errors)} broken links")
    return 1 if errors else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["build", "links"])
    parser.add_argument("--mdbook", default="mdbook")
    parser.add_argument("--book", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--readme", type=Path)
    opts = parser.parse_args()
    return build(opts) if opts.command == "build" else links(opts)


if __name__ == "__main__":
    sys.exit(main())
