from __future__ import annotations

from workers.cli import main

main()
