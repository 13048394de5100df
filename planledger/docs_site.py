"""An MkDocs hook (mkdocs.yml: `hooks`): the site also serves a few files that live beside
the code rather than in docs/, at their own paths, so they are written once and a page
links them as `bench/RESULTS.md` or shows `bench/claims_vs_agents.png`.

The files stay where their readers in the repository look for them (the benchmarks' figures
beside the benchmarks, the recordings' format beside the recordings); ARCHITECTURE.md is
included in docs/architecture.md instead (pymdownx.snippets); `mkdocs build
--strict` fails if one of them, or a link inside it, goes missing.
"""

from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
# Each file the site serves from outside docs/, by its path in the repository.
BESIDE_THE_CODE = (
    "CHANGELOG.md",
    "bench/README.md",
    "bench/RESULTS.md",
    "bench/claims_vs_agents.png",
    "replays/README.md",
    "replays/two-agents-race/timeline.png",
)


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    for path in BESIDE_THE_CODE:
        files.append(File.generated(config, path, abs_src_path=str(ROOT / path)))
    return files
